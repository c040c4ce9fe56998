// timeline_observer: the Trainer's moments as --timeline slices (see timeline_observer.h).
#include "src/timeline_observer.h"

#include "src/net.h"
#include "src/timeline.h"

void TimelineObserver::run_begin(const RunShape& shape) {
  timeline_start(comm_, shape.compute_threads, shape.how, shape.bucket_layers, shape.clocks);
}

void TimelineObserver::step_begin(const StepAt& at) { timeline_step((long long)at.step); }

void TimelineObserver::begin(Stretch s) {
  if (s == Stretch::kExchange) exchange_ = timeline_begin();
  if (s == Stretch::kOptimizerStep) optimizer_step_ = timeline_begin();
  if (s == Stretch::kCheckpoint) checkpoint_ = timeline_begin();
}

void TimelineObserver::end(Stretch s) {
  if (s == Stretch::kExchange && exchange_ != 0) timeline_gradient_allreduce(last_exchange_sample(), Net::kNumParams);
  if (s == Stretch::kOptimizerStep) timeline_end(TimelineKind::kOptimizerStep, optimizer_step_);
  if (s == Stretch::kCheckpoint) timeline_end(TimelineKind::kCheckpoint, checkpoint_);
}

AllreduceObserver* TimelineObserver::allreduce_observer(AllreduceObserver* next) {
  AllreduceObserver* own = timeline_allreduce_observer();
  return own ? own : next;
}

void TimelineObserver::test_begin(uint64_t step) {
  timeline_step((long long)step);
  test_pass_ = timeline_begin();
}

void TimelineObserver::test_end(int epoch, uint64_t step, double loss, double accuracy) {
  timeline_end(TimelineKind::kTestPass, test_pass_);
}

void TimelineObserver::run_end() { timeline_finish(comm_); }

OverlapObserver* TimelineObserver::overlap_observer() { return timeline_overlap_observer(); }
