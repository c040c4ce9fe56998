// timing_line: BARESGD_TIMING=1, one machine-readable line per rank on stderr at the end of the run
// for bench/: "timing: rank=R startup_s= train_s= test_s= comm_s= overlap_buckets= lane_rounds=
// threads=" (startup: the process's age when the first epoch began; train and test: the epochs'
// train steps and test passes; comm: the gradient exchanges; overlap_buckets: the buckets the
// overlapped averaging ran, 0 for the whole buffer; lane_rounds: the exchanges moved on Gloo's
// sync lane; threads: the rank's compute threads, then in parentheses the rule that decided them).
// Tests read the last three.
#pragma once
#include <chrono>
#include <cstddef>

#include "comm/communicator.h"
#include "src/step_observer.h"

// Whether BARESGD_TIMING is "1".
bool timing_enabled();

class TimingLine : public StepObserver {
 public:
  explicit TimingLine(const Communicator& comm) : comm_(comm) {}
  void run_begin(const RunShape& shape) override;
  void epoch_begin(int epoch, size_t first_sample) override;
  void epoch_end(int epoch) override;
  void begin(Stretch s) override;
  void end(Stretch s) override;
  void test_begin(uint64_t step) override;
  void test_end(int epoch, uint64_t step, double loss, double accuracy) override;
  void run_end() override;  // prints the line

 private:
  using Clock = std::chrono::steady_clock;
  static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  const Communicator& comm_;
  int threads_ = 1;
  const char* threads_rule_ = "";  // the rule that decided threads_, named after it in parentheses
  size_t buckets_ = 0;
  double startup_s_ = -1, train_s_ = 0, test_s_ = 0, comm_s_ = 0;
  Clock::time_point epoch_, test_, exchange_;
};
