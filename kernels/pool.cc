// pool: max_pool2d with kernel = stride = k, saving each window's argmax for the backward pass.
#include "kernels/pool.h"

#include <cstring>

namespace {

// One step of the row-major window scan: v (at index i) replaces the running max when strictly
// greater or NaN. Written as selects so the compiler emits blends, not a branch that mispredicts
// half the time on random data.
inline void scan(float v, int32_t i, float* best, int32_t* best_i) {
  const bool take = (v > *best) | (v != v);
  *best = take ? v : *best;
  *best_i = take ? i : *best_i;
}

}  // namespace

// x (N,C,H,W) -> y (N,C,H/k,W/k), idx (N,C,H/k,W/k); windows scanned row-major and a later element
// replaces the max only when strictly greater (or NaN), so the first max wins; the same rule
// as PyTorch's CPU kernel (a NaN always propagates).
void max_pool2d_forward(float* y, int32_t* idx, const float* x, int N, int C, int H, int W, int k) {
  const int OH = H / k, OW = W / k;
  for (int p = 0; p < N * C; ++p) {
    const float* xp = x + static_cast<size_t>(p) * H * W;
    float* yp = y + static_cast<size_t>(p) * OH * OW;
    int32_t* ip = idx + static_cast<size_t>(p) * OH * OW;
    if (k == 2) {  // the net's case, unrolled
      for (int oh = 0; oh < OH; ++oh) {
        const float* r0 = xp + 2 * oh * W;
        const float* r1 = r0 + W;
        const int32_t i0 = 2 * oh * W;
        for (int ow = 0; ow < OW; ++ow) {
          float best = r0[2 * ow];
          int32_t bi = i0 + 2 * ow;
          scan(r0[2 * ow + 1], i0 + 2 * ow + 1, &best, &bi);
          scan(r1[2 * ow], i0 + W + 2 * ow, &best, &bi);
          scan(r1[2 * ow + 1], i0 + W + 2 * ow + 1, &best, &bi);
          yp[oh * OW + ow] = best;
          ip[oh * OW + ow] = bi;
        }
      }
      continue;
    }
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow) {
        int32_t bi = (oh * k) * W + ow * k;
        float best = xp[bi];
        for (int kh = 0; kh < k; ++kh)
          for (int kw = 0; kw < k; ++kw) {
            const int32_t i = (oh * k + kh) * W + ow * k + kw;
            scan(xp[i], i, &best, &bi);
          }
        yp[oh * OW + ow] = best;
        ip[oh * OW + ow] = bi;
      }
  }
}

// dy (N,C,H/k,W/k), idx -> dx (N,C,H,W): zero, then route each dy to its window's argmax.
void max_pool2d_backward(float* dx, const float* dy, const int32_t* idx, int N, int C, int H, int W, int k) {
  const int OH = H / k, OW = W / k;
  std::memset(dx, 0, sizeof(float) * static_cast<size_t>(N) * C * H * W);
  for (int p = 0; p < N * C; ++p) {
    float* dxp = dx + static_cast<size_t>(p) * H * W;
    const float* dyp = dy + static_cast<size_t>(p) * OH * OW;
    const int32_t* ip = idx + static_cast<size_t>(p) * OH * OW;
    for (int i = 0; i < OH * OW; ++i) dxp[ip[i]] += dyp[i];
  }
}
