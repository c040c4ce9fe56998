// conv2d: 2-D convolution, stride 1, no padding, via im2col + one sgemm (plus a naive reference).
#pragma once
#include <cstddef>

// Floats of workspace conv2d_forward/backward need for a batch of N.
size_t conv2d_workspace_floats(int N, int C, int H, int W, int OC, int KH, int KW);

// x (N,C,H,W), w (OC,C,KH,KW), b (OC) -> y (N,OC,OH,OW), OH = H-KH+1, OW = W-KW+1
void conv2d_forward(float* y, const float* x, const float* w, const float* b, float* work, int N, int C, int H, int W,
                    int OC, int KH, int KW);
// dy (N,OC,OH,OW), x, w -> dx (N,C,H,W) (skipped when dx == nullptr), dw (OC,C,KH,KW), db (OC).
// Overwrites dx, dw, db.
void conv2d_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, float* work,
                     int N, int C, int H, int W, int OC, int KH, int KW);

// Naive loop references with the same contracts, for tests.
void conv2d_forward_naive(float* y, const float* x, const float* w, const float* b, int N, int C, int H, int W, int OC,
                          int KH, int KW);
void conv2d_backward_naive(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, int N,
                           int C, int H, int W, int OC, int KH, int KW);
