// pool: max_pool2d with kernel = stride = k (no padding, floor), saving argmax indices.
#pragma once
#include <cstdint>

// x (N,C,H,W) -> y (N,C,H/k,W/k), idx (N,C,H/k,W/k): flat index into x's (H,W) plane of each max
// (first max wins on ties, as PyTorch).
void max_pool2d_forward(float* y, int32_t* idx, const float* x, int N, int C, int H, int W, int k);
// dy (N,C,H/k,W/k), idx -> dx (N,C,H,W). Overwrites dx.
void max_pool2d_backward(float* dx, const float* dy, const int32_t* idx, int N, int C, int H, int W, int k);
