// rng: a small deterministic random generator (xoshiro256**, 4 words of state) for the tests' and
// benchmarks' synthetic data. Training draws torch's streams instead (kernels/torch_generator.h,
// src/torch_streams.h): this generator's per-(seed, rank, step) masks needed no saved state, but
// checkpoints now hold the torch generator, and masks independent per rank are not what the
// Horovod example draws, so it is no longer a training option.
#pragma once
#include <cstdint>

struct Rng {
  uint64_t s[4];
};

void rng_seed(Rng* rng, uint64_t seed);  // splitmix64 expansion of one seed
inline uint64_t rng_next_u64(Rng* rng);
inline float rng_uniform(Rng* rng);        // [0, 1), 24 random bits
uint64_t rng_below(Rng* rng, uint64_t n);  // uniform integer in [0, n), unbiased

// Inline: callers draw one number per element of their buffers.
// xoshiro256** (Blackman & Vigna).
inline uint64_t rng_next_u64(Rng* rng) {
  uint64_t* s = rng->s;
  const uint64_t x = s[1] * 5;
  const uint64_t result = ((x << 7) | (x >> 57)) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}

// Top 24 bits -> k * 2^-24, exactly representable, in [0, 1).
inline float rng_uniform(Rng* rng) { return static_cast<float>(rng_next_u64(rng) >> 40) * (1.0f / 16777216.0f); }
