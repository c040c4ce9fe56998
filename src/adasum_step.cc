// adasum_step: Horovod's delta method for Adasum (local momentum SGD step, Adasum of the deltas);
// with a timeline, the local step is an "optimizer step" slice and each Adasum level a step slice.
#include "src/adasum_step.h"

#include "kernels/sgd.h"
#include "src/timeline.h"

void adasum_step(Communicator& comm, float* params, float* momentum, const float* grads, size_t n,
                 const std::vector<Segment>& segments, const AdasumStepArgs& args) {
  if (comm.size() == 1) {
    if (args.trace) args.trace->clear();
    sgd_momentum_step(params, momentum, grads, n, args.lr, args.momentum, args.first);
    return;
  }
  thread_local std::vector<float> start;
  start.assign(params, params + n);
  const int64_t local = timeline_begin();  // the local step, inside the exchange, on the timeline
  sgd_momentum_step(params, momentum, grads, n, args.lr, args.momentum, args.first);
  timeline_end(TimelineKind::kOptimizerStep, local);
  for (size_t i = 0; i < n; ++i) params[i] -= start[i];  // delta = p_after - p_start
  // The levels, each a step of the timeline's "adasum allreduce" call when a timeline records.
  AllreduceObserver* observer = timeline_allreduce_observer();
  if (observer)
    observer->on_call_begin(AllreduceAlgorithm::kAdasum, n * (args.fp16 ? 2 : 4), timeline_detail::now_ns());
  adasum_allreduce(comm, params, n, segments, args.fp16, args.trace, observer);
  if (observer) observer->on_call_end(timeline_detail::now_ns());
  for (size_t i = 0; i < n; ++i) params[i] = start[i] + params[i];
}
