// test_net: the whole seed model against PyTorch — with fixed weights, input and dropout masks
// the loss, log-probabilities and all 8 gradient tensors match (1e-4), and 10 momentum-SGD steps
// reproduce PyTorch's loss sequence and final weights (1e-4).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernels/rng.h"
#include "kernels/sgd.h"
#include "src/net.h"
#include "tests/fixture.h"
#include "tests/error_metrics.h"

namespace {

using testutil::max_rel_err;

TEST(Net, LayoutIsPyTorchOrder) {
  size_t off = 0;
  for (const ParamView& p : Net::kParams) {
    EXPECT_EQ(p.offset, off) << p.name;
    size_t c = 1;
    for (int d : p.shape)
      if (d) c *= size_t(d);
    EXPECT_EQ(c, p.count) << p.name;
    off += p.count;
  }
  EXPECT_EQ(off, Net::kNumParams);
}

TEST(Net, ForwardBackwardMatchesPyTorch) {
  Fixture f("tests/fixtures/net.bin");
  const auto& x = f.at("x");
  const int n = int(x.shape[0]);
  Net net(n);
  net.params = f.at("params").f;
  ASSERT_EQ(net.params.size(), Net::kNumParams);
  std::copy(f.at("mask2d").f.begin(), f.at("mask2d").f.end(), net.mask2d());
  std::copy(f.at("mask").f.begin(), f.at("mask").f.end(), net.mask());
  const float* logp = net.forward(x.f.data(), n, true);
  EXPECT_LT(max_rel_err(logp, f.at("logp").f.data(), size_t(n) * 10), 1e-4);
  float loss = net.backward(f.at("target").i.data(), n);
  EXPECT_NEAR(loss, f.at("loss").f[0], 1e-4);
  const auto& g = f.at("grad").f;
  for (const ParamView& p : Net::kParams) {
    double e = max_rel_err(net.grads.data() + p.offset, g.data() + p.offset, p.count);
    EXPECT_LT(e, 1e-4) << p.name;
    RecordProperty(p.name, std::to_string(e));
  }
}

TEST(Net, DropoutMasksChangeTheResult) {
  // Guards the test above: with the masks ignored, the gradients would not match.
  Fixture f("tests/fixtures/net.bin");
  const int n = int(f.at("x").shape[0]);
  Net net(n);
  net.params = f.at("params").f;
  net.forward(f.at("x").f.data(), n, false);
  net.backward(f.at("target").i.data(), n);
  EXPECT_GT(max_rel_err(net.grads.data(), f.at("grad").f.data(), Net::kNumParams), 1e-3);
}

TEST(Net, TenMomentumStepsMatchPyTorch) {
  Fixture f("tests/fixtures/sgd_steps.bin");
  const auto& x = f.at("x");
  const int steps = int(x.shape[0]), n = int(x.shape[1]);
  Net net(n);
  net.params = f.at("params0").f;
  std::vector<float> buf(Net::kNumParams, 0.0f);
  const auto& losses = f.at("losses").f;
  for (int s = 0; s < steps; ++s) {
    net.forward(x.f.data() + size_t(s) * n * 784, n, false);
    float loss = net.backward(f.at("target").i.data() + size_t(s) * n, n);
    EXPECT_NEAR(loss, losses[s], 1e-4) << "step " << s;
    sgd_momentum_step(net.params.data(), buf.data(), net.grads.data(), Net::kNumParams, 0.01f, 0.5f, s == 0);
  }
  EXPECT_LT(max_rel_err(net.params.data(), f.at("params10").f.data(), Net::kNumParams), 1e-4);
}

// Slicing a batch across threads changes only the order of the gradient sums: forward, loss and
// gradients match the single-threaded net, for even, uneven and single-slice batches, repeatedly
// (the worker threads are reused across calls).
TEST(Net, ThreadedSlicesMatchOneThread) {
  Net one(64, 1), two(64, 2);
  EXPECT_EQ(one.threads(), 1);
  EXPECT_EQ(two.threads(), 2);
  Rng rng;
  rng_seed(&rng, 7);
  TorchGenerator g;
  torch_manual_seed(&g, 7);
  one.init(&g);
  two.params = one.params;
  std::vector<float> x(64 * 784);
  std::vector<int32_t> target(64);
  for (int round = 0; round < 3; ++round)
    for (const int n : {64, 40, 16, 17}) {
      for (float& v : x) v = rng_uniform(&rng) < 0.75f ? -0.4242f : 2.0f * rng_uniform(&rng);
      for (int32_t& t : target) t = int32_t(rng_below(&rng, 10));
      one.sample_dropout_masks(&g, n);
      std::copy(one.mask2d(), one.mask2d() + 64 * 20, two.mask2d());
      std::copy(one.mask(), one.mask() + 64 * 50, two.mask());
      const bool dropout = n != 17;
      const float* lp1 = one.forward(x.data(), n, dropout);
      const float* lp2 = two.forward(x.data(), n, dropout);
      EXPECT_LT(max_rel_err(lp1, lp2, size_t(n) * 10), 1e-5) << "n=" << n;
      const float l1 = one.backward(target.data(), n), l2 = two.backward(target.data(), n);
      EXPECT_NEAR(l1, l2, 1e-5) << "n=" << n;
      for (const ParamView& p : Net::kParams)
        EXPECT_LT(max_rel_err(one.grads.data() + p.offset, two.grads.data() + p.offset, p.count), 1e-5)
            << p.name << " n=" << n;
    }
}

TEST(Net, InitMatchesPyTorchBounds) {
  Net net(1);
  TorchGenerator g;
  torch_manual_seed(&g, 42);
  net.init(&g);
  const double fan_in[] = {25, 25, 250, 250, 320, 320, 50, 50};
  for (int t = 0; t < Net::kNumTensors; ++t) {
    const ParamView& p = Net::kParams[t];
    double bound = 1.0 / std::sqrt(fan_in[t]), mx = 0;
    // worse_err: a NaN or an infinity among the weights makes mx HUGE_VAL (std::max would skip a NaN).
    for (size_t i = 0; i < p.count; ++i) mx = testutil::worse_err(mx, std::fabs(double(net.params[p.offset + i])));
    EXPECT_LE(mx, bound) << p.name;
    if (p.count >= 50) {
      EXPECT_GT(mx, 0.8 * bound) << p.name;
    }
  }
}

TEST(Net, BatchSizeOutOfRangeIsAnError) {
  Net net(4);
  std::vector<float> x(5 * 784);
  EXPECT_THROW(net.forward(x.data(), 5, false), std::invalid_argument);
}

}  // namespace
