// train_hooks: the few calls train.cc makes around each step so that --metrics, --inspect,
// --inspect-dump, --check-sync and the end-of-run summary see the run. Every call is cheap unless
// its feature is on: without flags a step costs two steady_clock reads (the summary's comm time)
// and no collective; the features' collectives run only at logged (--metrics), inspected
// (--inspect) or checked (--check-sync) steps, identically on every rank.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "src/allreduce_bytes.h"
#include "src/check_sync.h"
#include "src/inspect.h"
#include "src/metrics.h"
#include "src/options.h"
#include "src/step_stats.h"

// What train.cc knows about the job that the records need.
struct RunFacts {
  std::string algorithm = "auto";  // the gradient allreduce (--allreduce; "auto": backend default)
  double lr = 0;                   // the learning rate the optimizer uses (scaled by world size)
  size_t elem_bytes = 4;           // bytes per gradient element on the wire (2 with fp16)
};

class TrainHooks {
 public:
  // Before training: checks BARESGD_TEST_PERTURB and --inspect-dump, and rank 0 opens --metrics
  // and writes the header (one allgather of host names). When rank 0 cannot write the file every
  // rank throws (rank 0 "--metrics PATH: cannot write: <reason>"), so nothing trains.
  TrainHooks(const Options& opts, Communicator& comm, const RunFacts& facts);

  void begin_step(int epoch, size_t batch, uint64_t step, bool logged);
  void data_begin() { clock_.data_begin(); }
  void data_done() { clock_.data_done(); }
  // After backward: grads = this rank's local gradient, params = before the update.
  void before_averaging(const float* grads, const float* params);
  void comm_begin() { clock_.comm_begin(); }
  void comm_end() { clock_.comm_end(); }
  // After the optimizer step: grads = the averaged gradient, params = updated (the test hook may
  // perturb them). Runs the inspection, the sync check and the step record of this step.
  void after_step(const float* grads, float* params, float loss, int n);
  void test_done(int epoch, uint64_t steps, double loss, double accuracy);
  // After training (every rank; one small allreduce): the summary line on rank 0's stderr, the
  // summary record, and the metrics file closed.
  void finish(double train_s);

  // True during an --inspect step (between begin_step and after_step).
  bool inspecting() const { return inspecting_; }
  // The observer to give the allreduce at this step: counts bytes during an inspected step and
  // passes every event on to `next` (returns `next` itself at other steps).
  AllreduceObserver* allreduce_observer(AllreduceObserver* next);
  // Adasum's coefficients of this inspected step on this rank (any list of records with level,
  // segment, a_coef and b_coef: comm's AdasumCoefficients). May stay empty.
  template <class Coefficients>
  void add_adasum_coefficients(const std::vector<Coefficients>& list) {
    for (const auto& c : list) adasum_.push_back({int(c.level), int(c.segment), double(c.a_coef), double(c.b_coef)});
  }

 private:
  void inspect(const float* grads, const float* params);
  void check_sync(const float* params);
  void log_step(float loss, int n);
  std::vector<std::vector<AdasumLevelCoef>> gather_adasum();

  const Options& opts_;
  Communicator& comm_;
  RunFacts facts_;
  const int rank_, size_;
  const std::string backend_;
  StepClock clock_;
  MetricsFile metrics_;
  PerturbSpec perturb_;
  ByteCountingObserver counter_;

  int epoch_ = 0;
  uint64_t batch_ = 0, step_ = 0;
  bool logged_ = false, inspecting_ = false;
  double grad_norm_ = 0;
  std::vector<float> local_grad_, params_before_;
  std::vector<AdasumLevelCoef> adasum_;

  uint64_t steps_ = 0;
  double samples_ = 0;
  int epochs_ = 0;
  bool has_accuracy_ = false;
  double accuracy_ = 0;
};
