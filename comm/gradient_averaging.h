// gradient_averaging: how the ranks' gradients (one flat buffer) become one, as Horovod's
// DistributedOptimizer combines them: the fused Average allreduce with predivide and fp16
// compression (Horovod's order of casts and roundings), and the Adasum combine (Horovod's
// AdasumMPI algorithm and rule). The start-up broadcast of parameters and optimizer state is
// src/train.cc's; the optimizer step is kernels/sgd.h's and src/adasum_step.h's.
#pragma once
#include <cstddef>
#include <vector>
#include "comm/allreduce.h"
#include "comm/communicator.h"
#include "comm/half_float.h"

// One combination of the Adasum tree: at distance `level` (1, 2, 4, ...: Horovod's `level`) the
// vector of the lower half of a group of 2*level ranks (a) and of the upper half (b) become
// a_coef * a + b_coef * b for layer tensor `segment`. Every rank of the group records the same.
struct AdasumCoefficients {
  int level;
  int segment;
  double a_coef, b_coef;
};

struct GradientAveraging {
  double predivide_factor = 1.0;  // --gradient-predivide-factor (Python float in Horovod)
  bool fp16 = false;              // --fp16-allreduce: IEEE half on the wire
  bool adasum = false;            // --use-adasum: combine with Adasum instead of averaging
  // Adasum only: when non-null, cleared and filled with this call's coefficients (--inspect).
  std::vector<AdasumCoefficients>* adasum_trace = nullptr;
  // --allreduce: the algorithm of the Average sum (Adasum keeps its own exchanges), and who watches it.
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto;
  AllreduceObserver* observer = nullptr;
};

// One layer's slice of the flat buffer (Adasum combines per layer).
struct Segment {
  size_t offset, count;
};

// Combine data (n floats) over ranks, in place, with ONE fused collective per call:
//   Average: sum_r (g_r * pre) * post with pre = float(1/f), post = float(f/size), all in float32;
//     fp16: g is rounded to half first, then pre/post multiply the halves (rounded to half).
//   Adasum: adasum_allreduce below (predivide must be 1, as in Horovod).
void average_gradients(Communicator& comm, float* grad, size_t n, const std::vector<Segment>& segments,
                       const GradientAveraging& how);

// Horovod's Adasum over all ranks of comm (a power of two; throws std::runtime_error otherwise):
// recursive vector-halving distance-doubling, per segment (layer tensor) a = own, b = peer:
// a_coef = 1 - a.b/|a|^2 * 0.5 unless |a|^2 < sqrt(DBL_MIN) (then 1), likewise b_coef.
// fp16: the buffer is rounded to half and combined as Horovod's fp16 Adasum, then widened.
// Every rank ends with the same bits. trace: as GradientAveraging::adasum_trace.
// observer (may be null) sees each level as a step: the halving levels as "reduce-scatter" (the
// pieces exchanged, combined), the doubling as "allgather"; the caller brackets the call.
void adasum_allreduce(Communicator& comm, float* data, size_t n, const std::vector<Segment>& segments, bool fp16,
                      std::vector<AdasumCoefficients>* trace = nullptr, AllreduceObserver* observer = nullptr);

// Horovod's threshold: a squared norm below it counts as a zero vector (coefficient 1).
double adasum_norm_sq_threshold();  // sqrt(DBL_MIN) ~ 1.49e-154

// Horovod's ScaleBuffer on CPU (average_gradients and the overlapped buckets): x[i] =
// float(factor) * x[i] in float32; for halves each value is widened, multiplied by float(factor)
// in float32, rounded to half.
// factor == 1.0 leaves the buffer untouched (Horovod skips the call).
void scale_buffer(float* x, size_t n, double factor);
void scale_half_buffer(half_bits* x, size_t n, double factor);

// Adasum of two vectors, per segment, with Horovod's rule and threshold:
// (1 - a.b/|a|^2 * 0.5) a + (1 - a.b/|b|^2 * 0.5) b into out (in double, rounded to float).
void adasum_combine(float* out, const float* a, const float* b, const std::vector<Segment>& segments);
