// sampler: DistributedSampler permutation/padding/striding and MNIST batch assembly.
#include "src/sampler.h"

#include <algorithm>

#include "kernels/torch_generator.h"

// g = torch.Generator(); g.manual_seed(seed + epoch); torch.randperm(n, generator=g).
std::vector<uint32_t> sampler_permutation(size_t n, uint64_t seed_plus_epoch) {
  TorchGenerator g;
  torch_manual_seed(&g, seed_plus_epoch);
  return torch_randperm(n, &g);
}

DistributedSampler::DistributedSampler(size_t dataset_size, int num_replicas, int rank, bool shuffle, uint64_t seed)
    : n_(dataset_size),
      num_samples_((dataset_size + size_t(num_replicas) - 1) / size_t(num_replicas)),
      replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed) {
  set_epoch(0);
}

void DistributedSampler::set_epoch(uint64_t epoch, size_t first_sample) {
  std::vector<uint32_t> all;
  if (shuffle_) {
    all = sampler_permutation(n_, seed_ + epoch);
  } else {
    all.resize(n_);
    for (size_t i = 0; i < n_; ++i) all[i] = uint32_t(i);
  }
  const size_t first = std::min(first_sample, n_);
  const size_t W = size_t(replicas_);
  num_samples_ = (n_ - first + W - 1) / W;
  const size_t total = first + num_samples_ * W;
  padding_ = total - n_;
  for (size_t k = 0; all.size() < total; ++k) all.push_back(all[k % n_]);  // pad with the head
  indices_.resize(num_samples_);
  for (size_t i = 0; i < num_samples_; ++i) indices_[i] = all[first + size_t(rank_) + i * W];
}

void gather_batch(float* x, int32_t* y, const MnistSplit& split, const uint32_t* idx, int count) {
  const int plane = split.rows * split.cols;
  // torchvision: ToTensor (p / 255 in float32), then Normalize((0.1307,), (0.3081,)).
  float table[256];
  for (int v = 0; v < 256; ++v) table[v] = (float(v) / 255.0f - 0.1307f) / 0.3081f;
  uint8_t px[28 * 28];  // load_mnist_files accepts 28x28 only
  if (plane != int(sizeof px))
    throw DataError(split.image_file.path() + ": images are " + std::to_string(split.rows) + "x" +
                    std::to_string(split.cols) + ", not 28x28");
  for (int b = 0; b < count; ++b) {
    read_image(split, idx[b], px);
    float* out = x + size_t(b) * plane;
    for (int i = 0; i < plane; ++i) out[i] = table[px[i]];
    y[b] = split.labels[idx[b]];
  }
}
