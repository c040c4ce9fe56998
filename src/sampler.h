// sampler: torch's DistributedSampler (shuffle, seed, set_epoch, padding by repeating the head,
// rank r takes r, r+W, ...) and DataLoader batching (last partial batch kept), plus the batch
// assembly that turns MNIST bytes into normalized floats.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/mnist.h"

class DistributedSampler {
 public:
  DistributedSampler(size_t dataset_size, int num_replicas, int rank, bool shuffle, uint64_t seed);
  // Re-draws the permutation (seed + epoch). first_sample > 0 continues an epoch that other ranks
  // (possibly another world size) began: positions first_sample.. of the epoch's permutation are
  // dealt out as a fresh epoch's would be (rank r takes first_sample + r, + r + W, ...), padded
  // with the permutation's head to a multiple of W. With first_sample = k*W (k steps of this
  // world) it equals the full epoch's indices from k on, so a same-size resume is unchanged.
  void set_epoch(uint64_t epoch, size_t first_sample = 0);
  size_t size() const { return num_samples_; }  // ceil((N - first_sample) / W): len(sampler)
  // How many of this epoch's indices (over all ranks) are padding, seen a second time: 0 when
  // N - first_sample divides by W.
  size_t padding() const { return padding_; }
  const std::vector<uint32_t>& indices() const { return indices_; }

 private:
  size_t n_, num_samples_, padding_ = 0;
  int replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  std::vector<uint32_t> indices_;
};

// The permutation of 0..n-1 the sampler uses for (seed + epoch): torch.randperm(n) from a
// generator seeded seed + epoch, as DistributedSampler.__iter__ draws it (equal to torch's,
// tests/test_torch_streams.cc). Identical on every rank and for every world size, so W ranks of
// batch B see the same samples as one rank of batch W*B.
std::vector<uint32_t> sampler_permutation(size_t n, uint64_t seed_plus_epoch);

// Number of batches the DataLoader yields: ceil(len / batch).
inline size_t num_batches(size_t len, size_t batch) { return (len + batch - 1) / batch; }

// Floats of one image in gather_batch's x (load_mnist_files accepts 28x28 images only).
constexpr size_t kImagePixels = 28 * 28;

// x (count,1,28,28) = (pixel/255 - 0.1307) / 0.3081, y (count) = label, for the samples
// idx[0..count) of split.
void gather_batch(float* x, int32_t* y, const MnistSplit& split, const uint32_t* idx, int count);
