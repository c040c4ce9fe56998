// activation: relu, dropout (elementwise) and dropout2d (whole channels); masks carry the scale.
#pragma once
#include <cstddef>
#include "kernels/torch_generator.h"

// x (n) -> y (n); y may alias x.
void relu_forward(float* y, const float* x, size_t n);
// dy (n), y (n) (the forward output) -> dx (n); dx may alias dy. Gradient 0 where y == 0.
void relu_backward(float* dx, const float* dy, const float* y, size_t n);

// mask (n) as torch 1.13's CPU dropout makes its noise: bernoulli_(1 - p) (one double uniform per
// element from g), then div_(1 - p), so each element is 0 with probability p, else 1/(1-p).
// p in [0,1); p == 0 gives all ones and draws nothing (torch returns the input unchanged).
void dropout_make_mask(float* mask, size_t n, double p, TorchGenerator* g);
// x (n), mask (n) -> y (n) = x * mask; y may alias x.
void dropout_forward(float* y, const float* x, const float* mask, size_t n);
// dy (n), mask (n) -> dx (n) = dy * mask; dx may alias dy.
void dropout_backward(float* dx, const float* dy, const float* mask, size_t n);

// Dropout2d: mask (N*C) from dropout_make_mask(mask, N*C, p, g) (torch: noise of shape (N,C,1,1));
// x (N*C, HW), mask (N*C) -> y (N*C, HW); y may alias x.
void dropout2d_forward(float* y, const float* x, const float* mask, int NC, int HW);
void dropout2d_backward(float* dx, const float* dy, const float* mask, int NC, int HW);
