// rng: xoshiro256** generator seeded by splitmix64; uniform floats and unbiased bounded integers.
#include "kernels/rng.h"

static uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64 never yields four zero words from consecutive outputs, so the state is valid.
void rng_seed(Rng* rng, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; ++i) rng->s[i] = splitmix64(&x);
}

// xoshiro256** (Blackman & Vigna).
uint64_t rng_next_u64(Rng* rng) {
  uint64_t* s = rng->s;
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

// Top 24 bits -> k * 2^-24, exactly representable, in [0, 1).
float rng_uniform(Rng* rng) {
  return static_cast<float>(rng_next_u64(rng) >> 40) * (1.0f / 16777216.0f);
}

// Rejection sampling: draws below 2^64 mod n would over-represent the small residues, so redraw.
// n == 0 returns 0.
uint64_t rng_below(Rng* rng, uint64_t n) {
  if (n <= 1) return 0;
  const uint64_t threshold = (0 - n) % n;  // = 2^64 mod n
  for (;;) {
    const uint64_t r = rng_next_u64(rng);
    if (r >= threshold) return r % n;
  }
}
