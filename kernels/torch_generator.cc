// torch_generator: mt19937 (Matsumoto & Nishimura) and PyTorch's CPU transformations of its words.
#include "kernels/torch_generator.h"

#include <algorithm>
#include <cmath>

namespace {
constexpr int kN = TorchGenerator::kWords, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;

inline uint32_t temper(uint32_t y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

inline uint32_t mix(uint32_t a, uint32_t b, uint32_t c) {
  const uint32_t y = (a & kUpper) | (b & kLower);
  return c ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrixA);
}

// The next block of 624 words (the mt19937 twist), in three runs so no index wraps.
void twist(TorchGenerator* g) {
  uint32_t* s = g->state;
  int i = 0;
  for (; i < kN - kM; ++i) s[i] = mix(s[i], s[i + 1], s[i + kM]);
  for (; i < kN - 1; ++i) s[i] = mix(s[i], s[i + 1], s[i + kM - kN]);
  s[kN - 1] = mix(s[kN - 1], s[0], s[kM - 1]);
  g->index = 0;
}
}  // namespace

void torch_manual_seed(TorchGenerator* g, uint64_t seed) {
  g->state[0] = uint32_t(seed);
  for (int j = 1; j < kN; ++j) g->state[j] = 1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + uint32_t(j);
  g->index = kN;
}

uint32_t torch_random(TorchGenerator* g) {
  if (g->index >= kN) twist(g);
  return temper(g->state[g->index++]);
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

// u = k * 2^-53 with k the 53 low bits of random64() (21 bits of the first word, all of the
// second); u < p, which for the integer k is k < ceil(p * 2^53) (p * 2^53 is exact). Runs of whole
// word pairs are taken straight from the block (dropout draws 8960 words a step).
void torch_bernoulli_fill(float* out, size_t n, double p, TorchGenerator* g) {
  const double pt = p <= 0 ? 0.0 : p >= 1 ? 0x1p53 : std::ceil(p * 0x1p53);
  const uint64_t below = uint64_t(pt);
  size_t i = 0;
  while (i < n) {
    if (g->index + 2 > uint32_t(kN)) {  // a pair that straddles two blocks
      const double u = double(torch_random64(g) & ((uint64_t(1) << 53) - 1)) * 0x1p-53;
      out[i++] = u < p ? 1.0f : 0.0f;
      continue;
    }
    const size_t pairs = std::min(n - i, size_t(kN - int(g->index)) / 2);
    const uint32_t* w = g->state + g->index;
    float* o = out + i;
    for (size_t k = 0; k < pairs; ++k) {
      const uint64_t bits = (uint64_t(temper(w[2 * k]) & 0x1fffffu) << 32) | temper(w[2 * k + 1]);
      o[k] = bits < below ? 1.0f : 0.0f;
    }
    g->index += uint32_t(2 * pairs);
    i += pairs;
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

int64_t torch_random_int64(TorchGenerator* g) { return int64_t(torch_random64(g) % (uint64_t(1) << 63)); }
