// torch_generator: mt19937 (Matsumoto & Nishimura) and PyTorch's CPU transformations of its words.
#include "kernels/torch_generator.h"

#include <cmath>

namespace {
constexpr int kN = TorchGenerator::kWords, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;

// The next block of 624 words (the mt19937 twist).
void twist(TorchGenerator* g) {
  uint32_t* s = g->state;
  for (int i = 0; i < kN; ++i) {
    const uint32_t y = (s[i] & kUpper) | (s[(i + 1) % kN] & kLower);
    s[i] = s[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  g->index = 0;
}
}  // namespace

void torch_manual_seed(TorchGenerator* g, uint64_t seed) {
  g->state[0] = uint32_t(seed);
  for (int j = 1; j < kN; ++j)
    g->state[j] = 1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + uint32_t(j);
  g->index = kN;
}

uint32_t torch_random(TorchGenerator* g) {
  if (g->index >= kN) twist(g);
  uint32_t y = g->state[g->index++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t torch_random64(TorchGenerator* g) {
  const uint64_t hi = torch_random(g);
  return (hi << 32) | torch_random(g);
}

// x = (word & (2^24 - 1)) * 2^-24 exactly; then x * (to - from) + from with ONE rounding: torch
// runs the AVX2 (or AVX-512) build of its uniform kernel on any x86-64-v3 CPU, and that build's
// compiler fused the expression into an fma. (ATEN_CPU_CAPABILITY=default torch rounds twice and
// differs from this in the last bit of about half the values; tests/test_torch_streams.cc.)
float torch_uniform_float(TorchGenerator* g, float from, float to) {
  const float x = float(torch_random(g) & 0xffffffu) * (1.0f / 16777216.0f);
  return std::fma(x, to - from, from);
}

void torch_uniform_fill(float* out, size_t n, double from, double to, TorchGenerator* g) {
  const float lo = float(from), hi = float(to);
  for (size_t i = 0; i < n; ++i) out[i] = torch_uniform_float(g, lo, hi);
}

void torch_bernoulli_fill(float* out, size_t n, double p, TorchGenerator* g) {
  for (size_t i = 0; i < n; ++i) {
    const double u = double(torch_random64(g) & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
    out[i] = u < p ? 1.0f : 0.0f;
  }
}

std::vector<uint32_t> torch_randperm(size_t n, TorchGenerator* g) {
  std::vector<uint32_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = uint32_t(i);
  for (size_t i = 0; i + 1 < n; ++i) {
    const size_t z = size_t(torch_random(g) % uint64_t(n - i));
    const uint32_t saved = r[i];
    r[i] = r[z + i];
    r[z + i] = saved;
  }
  return r;
}

int64_t torch_random_int64(TorchGenerator* g) {
  return int64_t(torch_random64(g) % (uint64_t(1) << 63));
}
