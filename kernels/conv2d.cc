// conv2d: stride-1 valid convolution as whole-batch im2col + one sgemm per pass, plus naive loops.
#include "kernels/conv2d.h"

#include <cstring>

#include "kernels/blas.h"

// How the fast path works (P = N*OH*OW output pixels of the whole batch, K = C*KH*KW):
//   im2col  col (K, P): col[(c,kh,kw)][(n,oh,ow)] = x[n][c][oh+kh][ow+kw]; each (row, n, oh) is one
//           contiguous run of OW floats, so the copy is a sequence of short block copies.
//   forward yt (OC, P) = w (OC, K) * col (K, P)            one sgemm, 2*OC*K*P flops
//           y[n][oc][:] = yt[oc][n*OHW : (n+1)*OHW] + b[oc] a block reorder into NCHW
//   backward dyt (OC, P) <- reorder of dy; db = row sums of dyt
//           dwt (K, OC) = col (K, P) * dyt^T (P, OC)    one sgemm, 2*OC*K*P flops; then dw = dwt^T
//                       (OpenBLAS runs this orientation faster than dw = dyt * col^T: docs/kernels.md)
//           dcol (K, P) = w^T (K, OC) * dyt (OC, P)     one sgemm (only when dx is wanted)
//           dx = col2im(dcol), the adjoint of im2col (scatter-add of the same runs)
// Workspace: col (K*P floats; reused for dcol), then yt/dyt (OC*P floats), then dwt (K*OC).
// The backward pass recomputes im2col from x rather than trusting the workspace to still hold it.

namespace {

struct ConvShape {
  int N, C, H, W, OC, KH, KW;
  int OH = H - KH + 1, OW = W - KW + 1, OHW = OH * OW, K = C * KH * KW, P = N * OHW;
};

void im2col_batch(float* col, const float* x, const ConvShape& s) {
  for (int c = 0; c < s.C; ++c)
    for (int kh = 0; kh < s.KH; ++kh)
      for (int kw = 0; kw < s.KW; ++kw) {
        float* row = col + static_cast<size_t>((c * s.KH + kh) * s.KW + kw) * s.P;
        for (int n = 0; n < s.N; ++n) {
          const float* xp = x + (static_cast<size_t>(n) * s.C + c) * s.H * s.W + kh * s.W + kw;
          float* dst = row + static_cast<size_t>(n) * s.OHW;
          // Runs are short (OW = 8 or 24 in the net): an inline loop beats a memcpy call per run.
          for (int oh = 0; oh < s.OH; ++oh) {
            const float* src = xp + oh * s.W;
            float* d = dst + oh * s.OW;
            for (int ow = 0; ow < s.OW; ++ow) d[ow] = src[ow];
          }
        }
      }
}

// dx = col2im(dcol): zero dx, then add every run back where im2col read it from.
void col2im_batch(float* dx, const float* col, const ConvShape& s) {
  std::memset(dx, 0, sizeof(float) * static_cast<size_t>(s.N) * s.C * s.H * s.W);
  for (int c = 0; c < s.C; ++c)
    for (int kh = 0; kh < s.KH; ++kh)
      for (int kw = 0; kw < s.KW; ++kw) {
        const float* row = col + static_cast<size_t>((c * s.KH + kh) * s.KW + kw) * s.P;
        for (int n = 0; n < s.N; ++n) {
          float* xp = dx + (static_cast<size_t>(n) * s.C + c) * s.H * s.W + kh * s.W + kw;
          const float* src = row + static_cast<size_t>(n) * s.OHW;
          for (int oh = 0; oh < s.OH; ++oh) {
            float* d = xp + oh * s.W;
            const float* r = src + oh * s.OW;
            for (int ow = 0; ow < s.OW; ++ow) d[ow] += r[ow];
          }
        }
      }
}

// Sum of n floats: 8 float lanes (vectorizable) per block of 512, blocks added in double.
double sum_floats(const float* v, size_t n) {
  double total = 0.0;
  size_t i = 0;
  for (; i + 512 <= n; i += 512) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t j = 0; j < 512; j += 8)
      for (int l = 0; l < 8; ++l) acc[l] += v[i + j + l];
    double block = 0.0;
    for (int l = 0; l < 8; ++l) block += acc[l];
    total += block;
  }
  for (; i < n; ++i) total += v[i];
  return total;
}

}  // namespace

size_t conv2d_workspace_floats(int N, int C, int H, int W, int OC, int KH, int KW) {
  const ConvShape s{N, C, H, W, OC, KH, KW};
  return static_cast<size_t>(s.K) * s.P + static_cast<size_t>(s.OC) * s.P + static_cast<size_t>(s.K) * s.OC;
}

// x (N,C,H,W), w (OC,C,KH,KW), b (OC) -> y (N,OC,OH,OW); work >= conv2d_workspace_floats(...)
void conv2d_forward(float* y, const float* x, const float* w, const float* b, float* work, int N, int C, int H, int W,
                    int OC, int KH, int KW) {
  const ConvShape s{N, C, H, W, OC, KH, KW};
  float* col = work;
  float* yt = work + static_cast<size_t>(s.K) * s.P;
  im2col_batch(col, x, s);
  sgemm(false, false, s.OC, s.P, s.K, 1.0f, w, col, 0.0f, yt);
  for (int n = 0; n < s.N; ++n)
    for (int oc = 0; oc < s.OC; ++oc) {
      const float* src = yt + static_cast<size_t>(oc) * s.P + static_cast<size_t>(n) * s.OHW;
      float* dst = y + (static_cast<size_t>(n) * s.OC + oc) * s.OHW;
      const float bias = b[oc];
      for (int i = 0; i < s.OHW; ++i) dst[i] = src[i] + bias;
    }
}

// dy (N,OC,OH,OW), x (N,C,H,W), w (OC,C,KH,KW) -> dx (N,C,H,W) or skipped, dw (OC,C,KH,KW), db (OC)
void conv2d_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, float* work,
                     int N, int C, int H, int W, int OC, int KH, int KW) {
  const ConvShape s{N, C, H, W, OC, KH, KW};
  float* col = work;
  float* dyt = work + static_cast<size_t>(s.K) * s.P;
  float* dwt = dyt + static_cast<size_t>(s.OC) * s.P;
  for (int oc = 0; oc < s.OC; ++oc) {
    float* dst = dyt + static_cast<size_t>(oc) * s.P;
    for (int n = 0; n < s.N; ++n) {
      const float* src = dy + (static_cast<size_t>(n) * s.OC + oc) * s.OHW;
      float* d = dst + static_cast<size_t>(n) * s.OHW;
      for (int i = 0; i < s.OHW; ++i) d[i] = src[i];
    }
    db[oc] = static_cast<float>(sum_floats(dst, s.P));
  }
  im2col_batch(col, x, s);
  sgemm(false, true, s.K, s.OC, s.P, 1.0f, col, dyt, 0.0f, dwt);
  for (int oc = 0; oc < s.OC; ++oc)
    for (int k = 0; k < s.K; ++k) dw[static_cast<size_t>(oc) * s.K + k] = dwt[k * s.OC + oc];
  if (dx != nullptr) {
    sgemm(true, false, s.K, s.P, s.OC, 1.0f, w, dyt, 0.0f, col);
    col2im_batch(dx, col, s);
  }
}

// Naive references: direct loops, sums accumulated in double.
void conv2d_forward_naive(float* y, const float* x, const float* w, const float* b, int N, int C, int H, int W, int OC,
                          int KH, int KW) {
  const int OH = H - KH + 1, OW = W - KW + 1;
  for (int n = 0; n < N; ++n)
    for (int oc = 0; oc < OC; ++oc)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          double acc = b[oc];
          for (int c = 0; c < C; ++c)
            for (int kh = 0; kh < KH; ++kh)
              for (int kw = 0; kw < KW; ++kw)
                acc += static_cast<double>(x[((n * C + c) * H + oh + kh) * W + ow + kw]) *
                       w[((oc * C + c) * KH + kh) * KW + kw];
          y[((n * OC + oc) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
}

void conv2d_backward_naive(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, int N,
                           int C, int H, int W, int OC, int KH, int KW) {
  const int OH = H - KH + 1, OW = W - KW + 1;
  for (int oc = 0; oc < OC; ++oc) {
    double acc = 0.0;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < OH * OW; ++i) acc += dy[(n * OC + oc) * OH * OW + i];
    db[oc] = static_cast<float>(acc);
  }
  for (int oc = 0; oc < OC; ++oc)
    for (int c = 0; c < C; ++c)
      for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw) {
          double acc = 0.0;
          for (int n = 0; n < N; ++n)
            for (int oh = 0; oh < OH; ++oh)
              for (int ow = 0; ow < OW; ++ow)
                acc += static_cast<double>(dy[((n * OC + oc) * OH + oh) * OW + ow]) *
                       x[((n * C + c) * H + oh + kh) * W + ow + kw];
          dw[((oc * C + c) * KH + kh) * KW + kw] = static_cast<float>(acc);
        }
  if (dx == nullptr) return;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int wi = 0; wi < W; ++wi) {
          double acc = 0.0;
          for (int oc = 0; oc < OC; ++oc)
            for (int kh = 0; kh < KH; ++kh) {
              const int oh = h - kh;
              if (oh < 0 || oh >= OH) continue;
              for (int kw = 0; kw < KW; ++kw) {
                const int ow = wi - kw;
                if (ow < 0 || ow >= OW) continue;
                acc += static_cast<double>(dy[((n * OC + oc) * OH + oh) * OW + ow]) *
                       w[((oc * C + c) * KH + kh) * KW + kw];
              }
            }
          dx[((n * C + c) * H + h) * W + wi] = static_cast<float>(acc);
        }
}
