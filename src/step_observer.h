// step_observer: what the Trainer (src/train.cc) tells everything that watches its run, at the
// moments of the seed's loop: --metrics, --inspect, --check-sync and the end-of-run summary
// (src/run_records.h), --timeline (src/timeline_observer.h), --sample-record
// (src/sample_record.h) and BARESGD_TIMING's line (src/timing_line.h). Every call has an empty
// default, so an observer overrides only the moments it needs; the Trainer holds them all as one
// StepObservers. Training itself never depends on an observer (the test hook that perturbs the
// parameters after a step aside, src/perturb_spec.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/gradient_averaging.h"
#include "comm/overlap_observer.h"
#include "src/clock_sync.h"

// Where a train step is in the run.
struct StepAt {
  int epoch = 1;        // 1-based
  size_t batch = 0;     // the batch's index in its epoch
  uint64_t step = 0;    // optimizer steps the run took before this one (a resumed run counts on)
  bool logged = false;  // the step prints the example's log line (batch % --log-interval == 0)
};

// What the run is, once it is set up (StepObserver::run_begin).
struct RunShape {
  int compute_threads = 1;
  const char* threads_rule = "";  // the rule that decided them (src/thread_policy.h thread_rule_name)
  GradientAveraging how;          // the gradient averaging (its algorithm, fp16, Adasum)
  // --overlap's buckets by their layers in backward order ("fc2+fc1", "conv2", "conv1"); empty:
  // the whole buffer is averaged after backward.
  std::vector<std::string> bucket_layers;
  // Every rank's clock offset to rank 0's, measured once for --metrics and --timeline alike (so
  // their wait times agree); nullptr when neither records.
  const ClockSync* clocks = nullptr;
};

// The stretches of a step the Trainer marks with begin and end.
enum class Stretch {
  kRead,           // slice 0 reads its share of the batch (inside forward, on the calling thread)
  kExchange,       // the gradient averaging (or Adasum's local step and exchange of deltas)
  kOptimizerStep,  // momentum SGD over the flat buffer (not with Adasum: inside kExchange)
  kCheckpoint,     // rank 0 writes a checkpoint (with the gather of Adasum's momentum buffers)
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Set-up is done; training starts. Every rank calls it (an observer may run collectives).
  virtual void run_begin(const RunShape& shape) {}
  // Epoch `epoch`'s train steps deal its samples from first_sample on (> 0: a resumed epoch
  // begun by another world size).
  virtual void epoch_begin(int epoch, size_t first_sample) {}
  virtual void step_begin(const StepAt& at) {}
  virtual void begin(Stretch s) {}
  virtual void end(Stretch s) {}
  // After backward: grads = this rank's own gradient, params = before the update.
  virtual void gradients_ready(const float* grads, const float* params) {}
  // What to give this step's allreduce: an observer that passes every event on to `next`, or
  // `next` itself.
  virtual AllreduceObserver* allreduce_observer(AllreduceObserver* next) { return next; }
  // Where this step's Adasum exchange records its coefficients (nullptr: nowhere).
  virtual std::vector<AdasumCoefficients>* adasum_trace() { return nullptr; }
  // After the optimizer step: grads = the averaged gradient, params = updated (the test hook may
  // perturb them); loss and n: this rank's batch.
  virtual void step_end(const StepAt& at, const float* grads, float* params, float loss, int n) {}
  virtual void epoch_end(int epoch) {}
  // The test pass after an epoch; it counts as step `step` (the next train step's).
  virtual void test_begin(uint64_t step) {}
  // Its result, averaged over ranks.
  virtual void test_end(int epoch, uint64_t step, double loss, double accuracy) {}
  // The end of training. Every rank calls it (an observer may run collectives).
  virtual void run_end() {}
  // The observer to give --overlap's bucket exchanges (nullptr: none), asked after run_begin.
  virtual OverlapObserver* overlap_observer() { return nullptr; }
};

// Several observers as one, in the order they were added: each call that opens something
// (run_begin, epoch_begin, step_begin, begin, gradients_ready, test_begin) goes to them in that
// order, each call that closes something in the reverse order, so their stretches nest; the
// allreduce observers are chained in that order (the first added sees each event first).
class StepObservers : public StepObserver {
 public:
  void add(std::unique_ptr<StepObserver> observer);

  void run_begin(const RunShape& shape) override;
  void epoch_begin(int epoch, size_t first_sample) override;
  void step_begin(const StepAt& at) override;
  void begin(Stretch s) override;
  void end(Stretch s) override;
  void gradients_ready(const float* grads, const float* params) override;
  AllreduceObserver* allreduce_observer(AllreduceObserver* next) override;
  std::vector<AdasumCoefficients>* adasum_trace() override;
  void step_end(const StepAt& at, const float* grads, float* params, float loss, int n) override;
  void epoch_end(int epoch) override;
  void test_begin(uint64_t step) override;
  void test_end(int epoch, uint64_t step, double loss, double accuracy) override;
  void run_end() override;
  OverlapObserver* overlap_observer() override;

 private:
  std::vector<std::unique_ptr<StepObserver>> all_;
};
