// net: the seed's MNIST CNN (Horovod PyTorch MNIST example) over one flat parameter buffer:
//   conv1 1->10 k5, max_pool 2, relu, conv2 10->20 k5, Dropout2d, max_pool 2, relu,
//   fc1 320->50, relu, dropout, fc2 50->10, log_softmax; loss nll.
// Gradients use the same flat layout, so the allreduce and the optimizer are one call each.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/rng.h"

// One parameter tensor's place in the flat buffer.
struct ParamView {
  const char* name;
  size_t offset, count;
  int shape[4];  // unused dims are 0
};

class Net {
 public:
  static constexpr size_t kNumParams = 21840;
  static constexpr int kNumTensors = 8;
  static const ParamView kParams[kNumTensors];  // conv1.weight ... fc2.bias, PyTorch order

  // Activation buffers sized for batches of up to max_batch samples (no allocation later).
  explicit Net(int max_batch);
  int max_batch() const { return max_batch_; }

  // PyTorch's default Conv2d/Linear init, U(-1/sqrt(fan_in), +1/sqrt(fan_in)), drawn in order.
  void init(Rng* rng);

  // Dropout masks for a batch of n (Dropout2d on conv2's 20 channels, dropout on fc1's 50).
  void sample_dropout_masks(Rng* rng, int n, float p = 0.5f);
  float* mask2d() { return mask2d_.data(); }  // (max_batch, 20): 0 or 1/(1-p)
  float* mask() { return mask_.data(); }      // (max_batch, 50)

  // x (n,1,28,28) -> log-probabilities (n,10). dropout: apply the current masks (training).
  const float* forward(const float* x, int n, bool dropout);
  // Fills grads (overwritten) for mean nll over the n targets of the last forward; returns loss.
  float backward(const int32_t* target, int n);

  std::vector<float> params;  // kNumParams
  std::vector<float> grads;   // kNumParams, same layout

 private:
  int max_batch_;
  bool dropout_ = false;
  const float* x_ = nullptr;
  std::vector<float> a1_, h1_, a2_, h2_, h3_, d3_, f2_, logp_;
  std::vector<int32_t> idx1_, idx2_;
  std::vector<float> g_a1_, g_h1_, g_a2_, g_h2_, g_h3_, g_f2_;
  std::vector<float> mask2d_, mask_, work_;
};
