// activation: relu, and dropout / dropout2d through precomputed masks that already carry 1/(1-p).
#include "kernels/activation.h"

// x (n) -> y (n) = max(x, 0); NaN passes through as in PyTorch.
void relu_forward(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// dy (n), y (n) -> dx (n) = dy where y > 0, else 0 (PyTorch's threshold_backward on the output).
void relu_backward(float* dx, const float* dy, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

// mask (n): 0 with probability p, else 1/(1-p); one rng_uniform draw per element (none if p == 0).
void dropout_make_mask(float* mask, size_t n, float p, Rng* rng) {
  if (p <= 0.0f) {
    for (size_t i = 0; i < n; ++i) mask[i] = 1.0f;
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  // scale * (0 or 1) is exactly 0 or scale; branch-free, as the draws are coin flips.
  for (size_t i = 0; i < n; ++i) mask[i] = scale * static_cast<float>(!(rng_uniform(rng) < p));
}

// x (n), mask (n) -> y (n) = x * mask
void dropout_forward(float* y, const float* x, const float* mask, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * mask[i];
}

// dy (n), mask (n) -> dx (n) = dy * mask
void dropout_backward(float* dx, const float* dy, const float* mask, size_t n) {
  for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
}

// x (N*C, HW), mask (N*C) -> y (N*C, HW): every element of channel row r scaled by mask[r].
void dropout2d_forward(float* y, const float* x, const float* mask, int NC, int HW) {
  for (int r = 0; r < NC; ++r) {
    const float m = mask[r];
    const size_t o = static_cast<size_t>(r) * HW;
    for (int i = 0; i < HW; ++i) y[o + i] = x[o + i] * m;
  }
}

// dy (N*C, HW), mask (N*C) -> dx (N*C, HW)
void dropout2d_backward(float* dx, const float* dy, const float* mask, int NC, int HW) {
  dropout2d_forward(dx, dy, mask, NC, HW);
}
