// timeline_observer: the StepObserver that records --timeline (src/timeline.h). When the run
// begins it starts the timeline (clocks synced to rank 0's, tracks named, each --overlap bucket's
// exchange on its own track); it marks each step and the test pass (which counts as the next
// step), records the gradient exchange, the optimizer step, the test pass and rank 0's checkpoint
// writes as slices, sees our allreduce algorithms' calls and steps, and at the end merges every
// rank's events into the one file. Each call is one load of a flag when nothing is recorded.
#pragma once
#include <cstdint>

#include "comm/communicator.h"
#include "src/step_observer.h"

class TimelineObserver : public StepObserver {
 public:
  explicit TimelineObserver(Communicator& comm) : comm_(comm) {}
  void run_begin(const RunShape& shape) override;  // timeline_start: a collective when on
  void step_begin(const StepAt& at) override;
  void begin(Stretch s) override;
  void end(Stretch s) override;
  // The timeline's own observer when it records (it passes nothing on: add this observer after
  // any whose allreduce observer passes events on), else next.
  AllreduceObserver* allreduce_observer(AllreduceObserver* next) override;
  void test_begin(uint64_t step) override;
  void test_end(int epoch, uint64_t step, double loss, double accuracy) override;
  void run_end() override;  // timeline_finish: a collective when on
  OverlapObserver* overlap_observer() override;

 private:
  Communicator& comm_;
  int64_t exchange_ = 0, optimizer_step_ = 0, checkpoint_ = 0, test_pass_ = 0;  // timeline_begin's
};
