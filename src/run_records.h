// run_records: the StepObserver that lets --metrics, --inspect, --inspect-dump, --check-sync and
// the end-of-run summary see the run. Every call is cheap unless its feature is on: without flags
// a step costs two steady_clock reads (the summary's comm time) and no collective; the features'
// collectives run only at logged (--metrics), inspected (--inspect) or checked (--check-sync)
// steps, identically on every rank.
#pragma once
#include <chrono>
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
#include "src/step_observer.h"
#include "src/step_stats.h"

// What the Trainer knows about the job that the records need.
struct RunFacts {
  std::string algorithm = "auto";    // the gradient allreduce (--allreduce; "auto": backend default)
  double lr = 0;                     // the learning rate the optimizer uses (scaled by world size)
  size_t elem_bytes = 4;             // bytes per gradient element on the wire (2 with fp16)
  bool host_oversubscribed = false;  // this rank's host runs more ranks than it has CPUs
};

class RunRecords : public StepObserver {
 public:
  // Before training: checks BARESGD_TEST_PERTURB and --inspect-dump, and rank 0 opens --metrics
  // and writes the header (one allgather of host names). When rank 0 cannot write the file every
  // rank throws (rank 0 "--metrics PATH: cannot write: <reason>"), so nothing trains.
  RunRecords(const Options& opts, Communicator& comm, const RunFacts& facts);

  // Keeps this rank's clock offset to rank 0's (RunShape::clocks) for the step records.
  void run_begin(const RunShape& shape) override;
  void epoch_begin(int epoch, size_t first_sample) override;
  void step_begin(const StepAt& at) override;
  void begin(Stretch s) override;  // kRead, kExchange: the step's data and comm times
  void end(Stretch s) override;
  // Keeps this rank's own gradient and the parameters before the update at an inspected step.
  void gradients_ready(const float* grads, const float* params) override;
  // Counts bytes during an inspected step and passes every event on to `next`.
  AllreduceObserver* allreduce_observer(AllreduceObserver* next) override;
  // Adasum's coefficients of an inspected step on this rank go here (nullptr at other steps).
  std::vector<AdasumCoefficients>* adasum_trace() override;
  // Runs the test perturbation, the inspection, the sync check and the step record of this step.
  void step_end(const StepAt& at, const float* grads, float* params, float loss, int n) override;
  void epoch_end(int epoch) override;
  void test_end(int epoch, uint64_t step, double loss, double accuracy) override;
  // After training (every rank; one small allreduce): --check-sync's one line when every check
  // passed and the summary line on rank 0's stderr, the summary record, and the metrics file
  // closed.
  void run_end() override;

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

  int64_t clock_offset_ns_ = 0;
  int epoch_ = 0;
  uint64_t batch_ = 0, step_ = 0;
  bool logged_ = false, inspecting_ = false;  // inspecting: an --inspect step, step_begin to step_end
  double grad_norm_ = 0;
  std::vector<float> local_grad_, params_before_;
  std::vector<AdasumCoefficients> adasum_trace_;  // the exchange's, this step
  std::vector<AdasumLevelCoef> adasum_;

  std::chrono::steady_clock::time_point epoch_start_;
  double train_s_ = 0;  // the epochs' train steps, for the summary
  uint64_t steps_ = 0;
  double samples_ = 0;
  int epochs_ = 0;
  uint64_t sync_checks_ = 0, last_sync_step_ = 0;  // --check-sync: checks passed, the last one's step
  bool has_accuracy_ = false;
  double accuracy_ = 0;
};
