// rng: a small deterministic random generator (xoshiro256**-style state in 4 words),
// used for init, dropout masks and sampler permutations. Plain data so checkpoints can save it.
#pragma once
#include <cstdint>

struct Rng {
  uint64_t s[4];
};

void rng_seed(Rng* rng, uint64_t seed);     // splitmix64 expansion of one seed
uint64_t rng_next_u64(Rng* rng);
float rng_uniform(Rng* rng);                // [0, 1), 24 random bits
uint64_t rng_below(Rng* rng, uint64_t n);   // uniform integer in [0, n), unbiased
