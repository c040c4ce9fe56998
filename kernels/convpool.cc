// convpool: fused conv2d -> [channel scale] -> max_pool2d(2) -> relu over lane-blocked batches.
// The kernels are written once in convpool_impl.inc and compiled twice here: for AVX-512 (under a
// target pragma; chosen at run time when the CPU has AVX-512F) and for the build's own target
// (x86-64-v3: AVX2 + FMA).
#include "kernels/convpool.h"

#include <immintrin.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace convpool_avx2 {
#define CONVPOOL_AVX512 0
#include "kernels/convpool_impl.inc"
#undef CONVPOOL_AVX512
}  // namespace convpool_avx2

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")
#pragma GCC diagnostic push
// GCC 12 flags _mm512_undefined_ps() inside its own intrinsics (max, reduce) as
// maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace convpool_avx512 {
#define CONVPOOL_AVX512 1
#include "kernels/convpool_impl.inc"
#undef CONVPOOL_AVX512
}  // namespace convpool_avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace {

// 1: AVX-512 kernels, 0: AVX2 kernels; decided on first use from the CPU (tests may force AVX2).
// BARESGD_CONV_KERNELS=avx2 picks the AVX2 kernels on an AVX-512 CPU too: the two give the same
// forward pass and dense gradients, but the sparse backward's sums run in another order, so a
// run's last bits differ between the two kinds of CPU (ConvPool.Avx2AndAvx512KernelsAgreeWhereTheyCan
// names which parts agree). The docs test pins it, as it pins OpenBLAS's kernel.
std::atomic<int> g_use_avx512{-1};

bool avx2_asked_for() {
  const char* env = std::getenv("BARESGD_CONV_KERNELS");
  return env && std::strcmp(env, "avx2") == 0;
}

bool use_avx512() {
  int v = g_use_avx512.load(std::memory_order_relaxed);
  if (v < 0) {
    __builtin_cpu_init();  // the AVX-512 namespace is compiled for exactly these four
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    v = avx512 && !avx2_asked_for() ? 1 : 0;
    g_use_avx512.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

}  // namespace

bool convpool_force_avx2(bool force) {
  g_use_avx512.store(-1);
  if (force) g_use_avx512.store(0);
  return use_avx512();
}

void pack_lanes(float* xb, const float* x, int N, int F) {
  if (use_avx512())
    convpool_avx512::pack(xb, x, N, F);
  else
    convpool_avx2::pack(xb, x, N, F);
}

void unpack_lanes(float* x, const float* xb, int N, int F) {
  if (use_avx512())
    convpool_avx512::unpack(x, xb, N, F);
  else
    convpool_avx2::unpack(x, xb, N, F);
}

void conv2d_pool_relu_forward_n16(float* y, uint16_t* sel, const float* x, const float* w, const float* b,
                                  const float* scale, int N, int C, int H, int W, int OC, int KH, int KW) {
  if (use_avx512())
    convpool_avx512::forward(y, sel, x, w, b, scale, N, C, H, W, OC, KH, KW);
  else
    convpool_avx2::forward(y, sel, x, w, b, scale, N, C, H, W, OC, KH, KW);
}

void conv2d_pool_relu_backward_weights_n16(float* dw, float* db, const float* dy, const uint16_t* sel,
                                           const float* scale, const float* x, int N, int C, int H, int W, int OC,
                                           int KH, int KW) {
  if (use_avx512())
    convpool_avx512::backward_weights(dw, db, dy, sel, scale, x, N, C, H, W, OC, KH, KW);
  else
    convpool_avx2::backward_weights(dw, db, dy, sel, scale, x, N, C, H, W, OC, KH, KW);
}

size_t conv2d_pool_relu_sparse_workspace_floats(int N, int C, int H, int W, int OC, int KH, int KW) {
  return convpool_avx2::sparse_layout(N, C, H, W, OC, KH, KW).total;
}

void conv2d_pool_relu_backward_sparse(float* dx, float* dw, float* db, const float* dy, const uint16_t* sel,
                                      const float* scale, const float* x, const float* w, float* work, int N, int C,
                                      int H, int W, int OC, int KH, int KW) {
  if (use_avx512())
    convpool_avx512::backward_sparse(dx, dw, db, dy, sel, scale, x, w, work, N, C, H, W, OC, KH, KW);
  else
    convpool_avx2::backward_sparse(dx, dw, db, dy, sel, scale, x, w, work, N, C, H, W, OC, KH, KW);
}
