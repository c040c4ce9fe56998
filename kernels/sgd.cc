// sgd: PyTorch SGD-with-momentum step over flat buffers and the default uniform Conv2d/Linear init.
#include "kernels/sgd.h"

// p (n), buf (n), g (n): buf = g (first) or momentum*buf + g; then p -= lr*buf.
void sgd_momentum_step(float* p, float* buf, const float* g, size_t n, float lr, float momentum,
                       bool first) {
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

// p (n) = bound * (2u - 1), u = rng_uniform in [0,1): values in [-bound, bound).
void uniform_init(float* p, size_t n, float bound, Rng* rng) {
  for (size_t i = 0; i < n; ++i) p[i] = bound * (2.0f * rng_uniform(rng) - 1.0f);
}
