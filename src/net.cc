// net: forward and backward of the seed's MNIST CNN, layer by layer over the kernels/.
#include "src/net.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/linear.h"
#include "kernels/loss.h"
#include "kernels/pool.h"
#include "kernels/sgd.h"

const ParamView Net::kParams[Net::kNumTensors] = {
    {"conv1.weight", 0, 250, {10, 1, 5, 5}},    {"conv1.bias", 250, 10, {10, 0, 0, 0}},
    {"conv2.weight", 260, 5000, {20, 10, 5, 5}}, {"conv2.bias", 5260, 20, {20, 0, 0, 0}},
    {"fc1.weight", 5280, 16000, {50, 320, 0, 0}}, {"fc1.bias", 21280, 50, {50, 0, 0, 0}},
    {"fc2.weight", 21330, 500, {10, 50, 0, 0}},  {"fc2.bias", 21830, 10, {10, 0, 0, 0}},
};

namespace {
// Shapes of the seed's model.
constexpr int kC1 = 10, kC2 = 20, kK = 5, kIn = 28, kA1 = 24, kP1 = 12, kA2 = 8, kP2 = 4;
constexpr int kFlat = kC2 * kP2 * kP2, kHidden = 50, kClasses = 10;
static_assert(kFlat == 320, "fc1 input is 320");

float* P(std::vector<float>& v, int t) { return v.data() + Net::kParams[t].offset; }
}  // namespace

Net::Net(int max_batch) : max_batch_(max_batch) {
  if (max_batch < 1) throw std::invalid_argument("Net: max_batch must be >= 1");
  const size_t B = size_t(max_batch);
  params.assign(kNumParams, 0.0f);
  grads.assign(kNumParams, 0.0f);
  a1_.resize(B * kC1 * kA1 * kA1);
  h1_.resize(B * kC1 * kP1 * kP1);
  idx1_.resize(h1_.size());
  a2_.resize(B * kC2 * kA2 * kA2);
  h2_.resize(B * kFlat);
  idx2_.resize(h2_.size());
  h3_.resize(B * kHidden);
  d3_.resize(B * kHidden);
  f2_.resize(B * kClasses);
  logp_.resize(B * kClasses);
  g_a1_.resize(a1_.size());
  g_h1_.resize(h1_.size());
  g_a2_.resize(a2_.size());
  g_h2_.resize(h2_.size());
  g_h3_.resize(h3_.size());
  g_f2_.resize(f2_.size());
  mask2d_.assign(B * kC2, 1.0f);
  mask_.assign(B * kHidden, 1.0f);
  work_.resize(std::max(conv2d_workspace_floats(max_batch, 1, kIn, kIn, kC1, kK, kK),
                        conv2d_workspace_floats(max_batch, kC1, kP1, kP1, kC2, kK, kK)));
}

void Net::init(Rng* rng) {
  const size_t fan_in[kNumTensors] = {25, 25, 250, 250, 320, 320, 50, 50};
  for (int t = 0; t < kNumTensors; ++t)
    uniform_init(P(params, t), kParams[t].count, 1.0f / std::sqrt(float(fan_in[t])), rng);
}

void Net::sample_dropout_masks(Rng* rng, int n, float p) {
  dropout_make_mask(mask2d_.data(), size_t(n) * kC2, p, rng);
  dropout_make_mask(mask_.data(), size_t(n) * kHidden, p, rng);
}

const float* Net::forward(const float* x, int n, bool dropout) {
  if (n < 1 || n > max_batch_)
    throw std::invalid_argument("Net::forward: batch " + std::to_string(n) + " not in [1, " +
                                std::to_string(max_batch_) + "]");
  x_ = x;
  dropout_ = dropout;
  float* w = work_.data();
  // conv1 -> (n,10,24,24); max_pool 2 -> (n,10,12,12); relu
  conv2d_forward(a1_.data(), x, P(params, 0), P(params, 1), w, n, 1, kIn, kIn, kC1, kK, kK);
  max_pool2d_forward(h1_.data(), idx1_.data(), a1_.data(), n, kC1, kA1, kA1, 2);
  relu_forward(h1_.data(), h1_.data(), size_t(n) * kC1 * kP1 * kP1);
  // conv2 -> (n,20,8,8); Dropout2d; max_pool 2 -> (n,20,4,4); relu; view (n,320)
  conv2d_forward(a2_.data(), h1_.data(), P(params, 2), P(params, 3), w, n, kC1, kP1, kP1, kC2, kK, kK);
  if (dropout) dropout2d_forward(a2_.data(), a2_.data(), mask2d_.data(), n * kC2, kA2 * kA2);
  max_pool2d_forward(h2_.data(), idx2_.data(), a2_.data(), n, kC2, kA2, kA2, 2);
  relu_forward(h2_.data(), h2_.data(), size_t(n) * kFlat);
  // fc1 -> (n,50); relu; dropout
  linear_forward(h3_.data(), h2_.data(), P(params, 4), P(params, 5), n, kFlat, kHidden);
  relu_forward(h3_.data(), h3_.data(), size_t(n) * kHidden);
  const float* fc2_in = h3_.data();
  if (dropout) {
    dropout_forward(d3_.data(), h3_.data(), mask_.data(), size_t(n) * kHidden);
    fc2_in = d3_.data();
  }
  // fc2 -> (n,10); log_softmax
  linear_forward(f2_.data(), fc2_in, P(params, 6), P(params, 7), n, kHidden, kClasses);
  log_softmax_forward(logp_.data(), f2_.data(), n, kClasses);
  return logp_.data();
}

float Net::backward(const int32_t* target, int n) {
  float* w = work_.data();
  const float loss = nll_loss_forward(logp_.data(), target, n, kClasses, true);
  nll_loss_backward(g_f2_.data(), target, 1.0f, n, kClasses, true);
  log_softmax_backward(g_f2_.data(), g_f2_.data(), logp_.data(), n, kClasses);
  // fc2: d(fc2 input) (n,50)
  const float* fc2_in = dropout_ ? d3_.data() : h3_.data();
  linear_backward(g_h3_.data(), P(grads, 6), P(grads, 7), g_f2_.data(), fc2_in, P(params, 6), n,
                  kHidden, kClasses);
  if (dropout_) dropout_backward(g_h3_.data(), g_h3_.data(), mask_.data(), size_t(n) * kHidden);
  relu_backward(g_h3_.data(), g_h3_.data(), h3_.data(), size_t(n) * kHidden);
  // fc1: d(h2) (n,320)
  linear_backward(g_h2_.data(), P(grads, 4), P(grads, 5), g_h3_.data(), h2_.data(), P(params, 4), n,
                  kFlat, kHidden);
  relu_backward(g_h2_.data(), g_h2_.data(), h2_.data(), size_t(n) * kFlat);
  max_pool2d_backward(g_a2_.data(), g_h2_.data(), idx2_.data(), n, kC2, kA2, kA2, 2);
  if (dropout_) dropout2d_backward(g_a2_.data(), g_a2_.data(), mask2d_.data(), n * kC2, kA2 * kA2);
  // conv2: d(h1) (n,10,12,12)
  conv2d_backward(g_h1_.data(), P(grads, 2), P(grads, 3), g_a2_.data(), h1_.data(), P(params, 2), w,
                  n, kC1, kP1, kP1, kC2, kK, kK);
  relu_backward(g_h1_.data(), g_h1_.data(), h1_.data(), size_t(n) * kC1 * kP1 * kP1);
  max_pool2d_backward(g_a1_.data(), g_h1_.data(), idx1_.data(), n, kC1, kA1, kA1, 2);
  // conv1: no input gradient needed
  conv2d_backward(nullptr, P(grads, 0), P(grads, 1), g_a1_.data(), x_, P(params, 0), w, n, 1, kIn,
                  kIn, kC1, kK, kK);
  return loss;
}
