// overlapped_averaging: Horovod's Average (predivide, fp16) bucket by bucket while backward runs:
// each bucket (adjacent layers' slices of the flat gradient, in backward order) starts its
// exchange as soon as backward has produced its layers, and finish() completes every bucket before
// the optimizer step. The bits equal average_gradients' whole-buffer call wherever
// overlap_refusal() is empty: every operation is per element, and the sum is in rank order.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/gradient_averaging.h"
#include "comm/overlap_observer.h"

// A bucket's slice of the flat buffer, the index (into the backward-order layer list) of the
// layer after whose backward it starts, and of its first layer (it holds first_layer..after_layer).
struct GradientBucket {
  size_t offset, count;
  int after_layer;
  int first_layer = 0;
};

// A bucket takes layers until it holds at least this many bytes (a smaller message costs a send and
// a wake-up for little): fc2 (2 KB) travels with fc1.
constexpr size_t kBucketMinBytes = 4096;

// Buckets over layers given in backward order (each a Segment of the flat buffer). Adjacent layers
// (the next one ends where the bucket begins) join a bucket until it reaches min_bytes
// (count * elem_bytes); a layer that is not adjacent closes it. Pure.
std::vector<GradientBucket> plan_buckets(const std::vector<Segment>& backward_layers, size_t elem_bytes,
                                         size_t min_bytes = kBucketMinBytes);

// Why the whole-buffer path must run instead (empty: the overlapped path gives the same bits):
// Adasum (its coefficients sum dot products over halves of the WHOLE buffer, and its per-level sums
// over 4+ ranks follow the backend's order for that length), an --allreduce other than auto (an
// explicit algorithm is a choice of how the bytes move), one rank (nothing to exchange), or a
// backend whose sum of this size is not in rank order (MPI_Allreduce on 3+ ranks, Gloo's ring).
std::string overlap_refusal(const Communicator& comm, const GradientAveraging& how, size_t n);

class OverlappedAveraging {
 public:
  // grad: the flat gradient of the layers (n floats in all); one GatherChannel per bucket is opened
  // here, so every rank must construct it at the same point. Throws std::invalid_argument for a bad
  // predivide factor, as average_gradients.
  OverlappedAveraging(Communicator& comm, float* grad, const std::vector<Segment>& backward_layers,
                      const GradientAveraging& how);
  ~OverlappedAveraging();
  // backward_layers[i] is final: lets the started exchanges move, starts the buckets it completes.
  void layer_done(int i);
  // Completes every bucket (starting any not started yet): grad holds the average.
  void finish();
  // Told each bucket's exchange from now on (nullptr: no clock is read). Not owned.
  void set_observer(OverlapObserver* observer) { observer_ = observer; }
  const std::vector<GradientBucket>& buckets() const { return buckets_; }

 private:
  struct Bucket;
  void start(Bucket& b);
  void complete(Bucket& b);

  Communicator& comm_;
  float* grad_;
  bool fp16_;
  double pre_, post_;
  std::vector<GradientBucket> buckets_;
  std::vector<std::unique_ptr<Bucket>> state_;
  OverlapObserver* observer_ = nullptr;
};
