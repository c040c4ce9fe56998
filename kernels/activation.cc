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

// mask (n): bernoulli_(1 - p) then div_(1 - p) in float32, as torch's CPU dropout (p == 0: ones).
void dropout_make_mask(float* mask, size_t n, double p, TorchGenerator* g) {
  if (p <= 0.0) {
    for (size_t i = 0; i < n; ++i) mask[i] = 1.0f;
    return;
  }
  torch_bernoulli_fill(mask, n, 1.0 - p, g);
  const float keep = float(1.0 - p);  // div_ by the double scalar runs in the tensor's float32
  for (size_t i = 0; i < n; ++i) mask[i] = mask[i] / keep;
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
