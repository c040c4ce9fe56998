// linear: fully connected layer y = x w^T + b through sgemm, plus naive loop references.
#include "kernels/linear.h"

#include <cstddef>

#include "kernels/blas.h"

// x (N,IN), w (OUT,IN), b (OUT) -> y (N,OUT): y = b broadcast, then y += x (N,IN) * w^T (IN,OUT).
void linear_forward(float* y, const float* x, const float* w, const float* b, int N, int IN, int OUT) {
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OUT; ++o) y[static_cast<size_t>(n) * OUT + o] = b[o];
  sgemm(false, true, N, OUT, IN, 1.0f, x, w, 1.0f, y);
}

// dy (N,OUT), x (N,IN), w (OUT,IN) -> dx (N,IN) = dy w (or skipped), dw (OUT,IN) = dy^T x,
// db (OUT) = column sums of dy.
void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, int N, int IN,
                     int OUT) {
  if (dx != nullptr) sgemm(false, false, N, IN, OUT, 1.0f, dy, w, 0.0f, dx);
  sgemm(true, false, OUT, IN, N, 1.0f, dy, x, 0.0f, dw);
  for (int o = 0; o < OUT; ++o) db[o] = 0.0f;
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OUT; ++o) db[o] += dy[static_cast<size_t>(n) * OUT + o];
}

// Naive references, sums in double.
void linear_forward_naive(float* y, const float* x, const float* w, const float* b, int N, int IN, int OUT) {
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OUT; ++o) {
      double acc = b[o];
      for (int i = 0; i < IN; ++i) acc += static_cast<double>(x[n * IN + i]) * w[o * IN + i];
      y[n * OUT + o] = static_cast<float>(acc);
    }
}

void linear_backward_naive(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, int N,
                           int IN, int OUT) {
  if (dx != nullptr)
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < IN; ++i) {
        double acc = 0.0;
        for (int o = 0; o < OUT; ++o) acc += static_cast<double>(dy[n * OUT + o]) * w[o * IN + i];
        dx[n * IN + i] = static_cast<float>(acc);
      }
  for (int o = 0; o < OUT; ++o) {
    for (int i = 0; i < IN; ++i) {
      double acc = 0.0;
      for (int n = 0; n < N; ++n) acc += static_cast<double>(dy[n * OUT + o]) * x[n * IN + i];
      dw[o * IN + i] = static_cast<float>(acc);
    }
    double acc = 0.0;
    for (int n = 0; n < N; ++n) acc += dy[n * OUT + o];
    db[o] = static_cast<float>(acc);
  }
}
