// adasum_step: Horovod's delta method for Adasum (local momentum SGD step, Adasum of the deltas).
#include "src/adasum_step.h"

#include "kernels/sgd.h"

void adasum_step(Communicator& comm, float* params, float* momentum, const float* grads, size_t n,
                 const std::vector<Segment>& segments, const AdasumStepArgs& args) {
  if (comm.size() == 1) {
    if (args.trace) args.trace->clear();
    sgd_momentum_step(params, momentum, grads, n, args.lr, args.momentum, args.first);
    return;
  }
  thread_local std::vector<float> start;
  start.assign(params, params + n);
  sgd_momentum_step(params, momentum, grads, n, args.lr, args.momentum, args.first);
  for (size_t i = 0; i < n; ++i) params[i] -= start[i];  // delta = p_after - p_start
  adasum_allreduce(comm, params, n, segments, args.fp16, args.trace);
  for (size_t i = 0; i < n; ++i) params[i] = start[i] + params[i];
}
