// torch_generator: PyTorch 1.13's CPU generator (mt19937 seeded as torch.manual_seed does) and the
// draws PyTorch's CPU kernels make from it, so a run can take exactly PyTorch's random numbers:
//   random()          one 32-bit word                     (CPUGeneratorImpl::random)
//   random64()        two words, the first one high        (CPUGeneratorImpl::random64)
//   uniform_float     Tensor.uniform_(from, to) on float32: 24 low bits of one word * 2^-24
//   bernoulli_fill    Tensor.bernoulli_(p) on float32, the serial (no-MKL) kernel: per element a
//                     double uniform from 53 low bits of random64(), 1 where it is < p
//   randperm          torch.randperm(n, generator=g) on CPU: swap i with i + random() % (n - i)
//   random_int64      torch.empty((), dtype=int64).random_(): random64() mod 2^63 (the
//                     DataLoader iterator's base seed)
// The state is plain data (the 624 words and the position), so checkpoints save it as it is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

struct TorchGenerator {
  static constexpr int kWords = 624;
  uint32_t state[kWords];
  uint32_t index;  // next word of state to hand out; kWords: the block is used up
};

// torch.manual_seed(seed) / Generator.manual_seed(seed): mt19937 over the seed's low 32 bits.
void torch_manual_seed(TorchGenerator* g, uint64_t seed);
uint32_t torch_random(TorchGenerator* g);
uint64_t torch_random64(TorchGenerator* g);
// One element of uniform_(from, to) on a float32 tensor; from/to as the kernel casts them.
float torch_uniform_float(TorchGenerator* g, float from, float to);
// Fills out[0..n) as uniform_(from, to) does a contiguous float32 tensor (from/to cast to float).
void torch_uniform_fill(float* out, size_t n, double from, double to, TorchGenerator* g);
// Fills out[0..n) as bernoulli_(p) does a contiguous float32 tensor: 1 or 0.
void torch_bernoulli_fill(float* out, size_t n, double p, TorchGenerator* g);
// torch.randperm(n, generator=g).
std::vector<uint32_t> torch_randperm(size_t n, TorchGenerator* g);
int64_t torch_random_int64(TorchGenerator* g);
