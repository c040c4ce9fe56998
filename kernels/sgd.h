// sgd: PyTorch's SGD with momentum (no dampening, nesterov or weight decay) over flat buffers,
// and PyTorch's default Conv2d/Linear init.
#pragma once
#include <cstddef>
#include "kernels/rng.h"

// p (n), buf (n), g (n). first: buf = g; else buf = momentum*buf + g. Then p -= lr*buf.
void sgd_momentum_step(float* p, float* buf, const float* g, size_t n, float lr, float momentum,
                       bool first);

// p (n) ~ U(-bound, bound); PyTorch's default for Conv2d/Linear weight and bias uses
// bound = 1/sqrt(fan_in).
void uniform_init(float* p, size_t n, float bound, Rng* rng);
