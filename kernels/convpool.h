// convpool: the net's conv2d -> [channel scale] -> max_pool2d(2) -> relu block as one fused kernel
// pair over lane-blocked batches, the layout the fast path keeps activations in.
//
// Lane-blocked layout "(NB,C,H,W,16)": samples are grouped in blocks of 16 (NB = ceil(N/16));
// element (n,c,h,w) lives at ((((n/16)*C + c)*H + h)*W + w)*16 + n%16, so one 16-float vector holds
// the same pixel of 16 samples and every convolution tap is a full-width vector FMA. Lanes n >= N
// ("padding lanes") are zero in every array these kernels write, and are ignored where they read.
//
// The pair computes, per sample, exactly what conv2d_forward + dropout2d_forward (scale) +
// max_pool2d_forward(k = 2) + relu_forward compute (and their backward passes), with sums in a
// different order. Instead of int32 argmax indices the forward saves, per pooled output, four
// 16-bit lane masks sel[k] (k = window element, row-major: (0,0),(0,1),(1,0),(1,1)): bit l is set
// when lane l's window max is element k (first max wins, as PyTorch), the pooled output after relu
// is > 0 and l < N. That folds the relu backward and the padding lanes into the routing.
//
// Two backward strategies, both exact (they skip only zero terms):
//   conv2d_pool_relu_backward_weights_n16: dense over lanes; each window element's gradient is a
//     masked FMA, so no gradient image is materialized. Best when C is small (conv1: C = 1).
//   conv2d_pool_relu_backward_sparse: visits only the nonzero routed gradients (max-pool passes
//     1 of 4 pixels; relu and Dropout2d zero ~70% of the pooled outputs of conv2 in training, so
//     ~1/13 of the dense work) with channels innermost, so each visit is KH*KW*ceil(C/16) full
//     vector FMAs. Also gives dx.
// All run AVX-512 kernels when the CPU has AVX-512 F/VL/BW/DQ, AVX2+FMA kernels otherwise.
// Arrays may have any alignment; 64-byte aligned lane-blocked arrays run faster (docs/kernels.md).
#pragma once
#include <cstddef>
#include <cstdint>

constexpr int kLanes = 16;  // samples per lane block

inline int lane_blocks(int N) { return (N + kLanes - 1) / kLanes; }

// x (N,F) row-major -> xb (NB,F,16); padding lanes zeroed.
void pack_lanes(float* xb, const float* x, int N, int F);
// xb (NB,F,16) -> x (N,F); padding lanes dropped.
void unpack_lanes(float* x, const float* xb, int N, int F);

// x (NB,C,H,W,16), w (OC,C,KH,KW), b (OC), scale (N,OC) or nullptr (all ones)
//   -> y (NB,OC,PH,PW,16) = relu(max_pool2d(scale[n][oc] * (conv2d(x, w) + b), 2)),
//      sel (NB,OC,PH,PW,4) lane masks (see above);
//   OH = H-KH+1, OW = W-KW+1, PH = OH/2, PW = OW/2 (floor: an odd last row/column is never used).
void conv2d_pool_relu_forward_n16(float* y, uint16_t* sel, const float* x, const float* w, const float* b,
                                  const float* scale, int N, int C, int H, int W, int OC, int KH, int KW);

// dy (NB,OC,PH,PW,16) (gradient of y), sel, scale (N,OC) or nullptr, x (NB,C,H,W,16)
//   -> dw (OC,C,KH,KW), db (OC). Overwrites dw, db.
void conv2d_pool_relu_backward_weights_n16(float* dw, float* db, const float* dy, const uint16_t* sel,
                                           const float* scale, const float* x, int N, int C, int H, int W, int OC,
                                           int KH, int KW);

// Floats of workspace conv2d_pool_relu_backward_sparse needs (any alignment).
size_t conv2d_pool_relu_sparse_workspace_floats(int N, int C, int H, int W, int OC, int KH, int KW);

// dy (NB,OC,PH,PW,16), sel, scale (N,OC) or nullptr, x (NB,C,H,W,16), w (OC,C,KH,KW)
//   -> dx (NB,C,H,W,16) (skipped when nullptr), dw (OC,C,KH,KW), db (OC). Overwrites all three.
void conv2d_pool_relu_backward_sparse(float* dx, float* dw, float* db, const float* dy, const uint16_t* sel,
                                      const float* scale, const float* x, const float* w, float* work, int N, int C,
                                      int H, int W, int OC, int KH, int KW);

// For tests: force the AVX2 kernels even on an AVX-512 machine (false: pick by CPU, the default).
// Process-wide; do not flip it while kernels run. Returns whether AVX-512 kernels are in use.
bool convpool_force_avx2(bool force);
