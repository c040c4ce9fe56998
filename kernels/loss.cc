// loss: numerically stable log_softmax over classes and the NLL loss (mean or sum), both passes.
#include "kernels/loss.h"

#include <cmath>

// x (N,C) -> y (N,C) = x - max - log(sum exp(x - max)) per row.
void log_softmax_forward(float* y, const float* x, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const float* xr = x + static_cast<size_t>(n) * C;
    float* yr = y + static_cast<size_t>(n) * C;
    float mx = xr[0];
    for (int c = 1; c < C; ++c) mx = xr[c] > mx ? xr[c] : mx;
    double sum = 0.0;
    for (int c = 0; c < C; ++c) sum += std::exp(static_cast<double>(xr[c]) - mx);
    const double lse = mx + std::log(sum);
    for (int c = 0; c < C; ++c) yr[c] = static_cast<float>(xr[c] - lse);
  }
}

// dy (N,C), y (N,C) -> dx (N,C) = dy - exp(y) * sum_c dy; the row sum is taken before dx is written
void log_softmax_backward(float* dx, const float* dy, const float* y, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const float* dyr = dy + static_cast<size_t>(n) * C;
    const float* yr = y + static_cast<size_t>(n) * C;
    float* dxr = dx + static_cast<size_t>(n) * C;
    double s = 0.0;
    for (int c = 0; c < C; ++c) s += dyr[c];
    for (int c = 0; c < C; ++c) dxr[c] = static_cast<float>(dyr[c] - std::exp(static_cast<double>(yr[c])) * s);
  }
}

// logp (N,C), target (N) -> -sum_n logp[n, target[n]], divided by N when mean.
float nll_loss_forward(const float* logp, const int32_t* target, int N, int C, bool mean) {
  double sum = 0.0;
  for (int n = 0; n < N; ++n) sum -= logp[static_cast<size_t>(n) * C + target[n]];
  if (mean && N > 0) sum /= N;
  return static_cast<float>(sum);
}

// dloss -> dlogp (N,C): zero except -dloss (/N when mean) at each row's target.
void nll_loss_backward(float* dlogp, const int32_t* target, float dloss, int N, int C, bool mean) {
  const float g = mean && N > 0 ? -dloss / static_cast<float>(N) : -dloss;
  for (size_t i = 0; i < static_cast<size_t>(N) * C; ++i) dlogp[i] = 0.0f;
  for (int n = 0; n < N; ++n) dlogp[static_cast<size_t>(n) * C + target[n]] = g;
}
