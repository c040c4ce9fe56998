// sgd: PyTorch SGD-with-momentum step over flat buffers.
#include "kernels/sgd.h"

// p (n), buf (n), g (n): buf = g (first) or momentum*buf + g; then p -= lr*buf.
void sgd_momentum_step(float* p, float* buf, const float* g, size_t n, float lr, float momentum, bool first) {
  if (first) {
    for (size_t i = 0; i < n; ++i) {
      buf[i] = g[i];
      p[i] -= lr * buf[i];
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      buf[i] = momentum * buf[i] + g[i];
      p[i] -= lr * buf[i];
    }
  }
}
