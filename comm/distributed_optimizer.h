// distributed_optimizer: Horovod's DistributedOptimizer semantics over one flat gradient buffer:
// broadcast of the initial state, fused Average allreduce with predivide, fp16 compression, Adasum.
#pragma once
#include <cstddef>
#include <vector>
#include "comm/allreduce.h"
#include "comm/communicator.h"

struct GradientAveraging {
  float predivide_factor = 1.0f;  // --gradient-predivide-factor
  bool fp16 = false;              // --fp16-allreduce: IEEE half on the wire
  bool adasum = false;            // --use-adasum
  // --allreduce: the algorithm of the Average sum (Adasum keeps its own exchanges), and who watches it.
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto;
  AllreduceObserver* observer = nullptr;
};

// One layer's slice of the flat buffer (Adasum combines per layer).
struct Segment {
  size_t offset, count;
};

// Average grad (n floats) over ranks, in place, with ONE fused collective per call:
//   Average: sum_r (g_r / f) * f / size; fp16: the summed values travel as halves.
//   Adasum: recursive vector-halving distance-doubling with the per-segment Adasum rule
//   (size must be a power of two; throws otherwise).
void average_gradients(Communicator& comm, float* grad, size_t n,
                       const std::vector<Segment>& segments, const GradientAveraging& how);

// IEEE binary16 conversion (round to nearest even), exposed for tests.
half_bits float_to_half(float f);
float half_to_float(half_bits h);

// Adasum of two vectors, per segment: (1 - a.b/(2|a|^2)) a + (1 - a.b/(2|b|^2)) b into out.
void adasum_combine(float* out, const float* a, const float* b, const std::vector<Segment>& segments);
