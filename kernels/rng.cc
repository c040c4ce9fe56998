// rng: xoshiro256** generator seeded by splitmix64; uniform floats and unbiased bounded integers.
#include "kernels/rng.h"

static uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64 never yields four zero words from consecutive outputs, so the state is valid.
void rng_seed(Rng* rng, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; ++i) rng->s[i] = splitmix64(&x);
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
