// sgd: PyTorch's SGD with momentum (no dampening, nesterov or weight decay) over flat buffers.
#pragma once
#include <cstddef>

// p (n), buf (n), g (n). first: buf = g; else buf = momentum*buf + g. Then p -= lr*buf.
void sgd_momentum_step(float* p, float* buf, const float* g, size_t n, float lr, float momentum, bool first);
