// adasum_step: one optimizer step of Horovod's _DistributedAdasumOptimizer (horovod/torch/
// optimizer.py) for momentum SGD over flat buffers: every rank takes its own local step with its
// own momentum buffer, the parameter delta is combined with Adasum per layer tensor, and every
// rank sets p = start + Adasum(deltas).
#pragma once
#include <cstddef>
#include <vector>

#include "comm/communicator.h"
#include "comm/gradient_averaging.h"

struct AdasumStepArgs {
  float lr = 0.01f;  // not scaled by the world size (Horovod's example on CPU)
  float momentum = 0.5f;
  bool first = false;                                // the momentum buffer's first step (PyTorch: buf = g)
  bool fp16 = false;                                 // --fp16-allreduce: the deltas travel and combine as halves
  std::vector<AdasumCoefficients>* trace = nullptr;  // optional, filled for this call
};

// params (n), momentum (n, this rank's own; never re-synchronised), grads (n, this rank's own).
// One rank: the plain local step (Horovod's DistributedOptimizer does no allreduce at size 1).
// Otherwise, as Horovod per tensor: start = p; p = SGD step of p; p -= start (float32);
// p = Adasum(p) over the ranks (fp16: compress, combine, decompress); p = start + p (float32).
// Throws like adasum_allreduce (non-power-of-two world, segments not tiling n).
void adasum_step(Communicator& comm, float* params, float* momentum, const float* grads, size_t n,
                 const std::vector<Segment>& segments, const AdasumStepArgs& args);
