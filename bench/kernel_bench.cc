// kernel_bench: GFLOP/s of baresgd's conv2d/linear kernels (forward, backward) and of one whole
// Net step at the seed's batch size, against a large sgemm through the same wrapper, one thread.
//
// Usage: kernel_bench [--batch N] [--min-time SEC] [--gemm-size N] [--threads T]
// Prints machine-readable lines (parsed by bench/report.py):
//   blas: config="..." core=NAME threads=T
//   kernel: name=NAME pass=forward|backward|step flops=F sec=S gflops=G reps=R
// sec is the median over reps of one call; gflops = flops / sec. FLOPs count 2 per
// multiply-add of the convolution/matmul only (bias, im2col and col2im are free), so the
// number is comparable with the sgemm row. conv rows: im2col + sgemm (kernels/conv2d.h);
// conv*_fused rows (when kernels/convpool.h exists): the fused conv+pool+relu blocks the net runs.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/blas.h"
#include "kernels/conv2d.h"
#if __has_include("kernels/convpool.h")
#include "kernels/convpool.h"
#define BENCH_HAVE_CONVPOOL 1
#endif
#include "kernels/linear.h"
#include "kernels/rng.h"
#include "kernels/torch_generator.h"
#include "src/net.h"

extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

namespace {

using Clock = std::chrono::steady_clock;

double g_min_time = 0.3;  // seconds of timed calls per row (after one warm-up call)

// Median seconds of one call of f, repeated until g_min_time has passed (at least 3 times).
double time_call(const std::function<void()>& f, int* reps_out) {
  f();  // warm-up (page faults, OpenBLAS buffers)
  std::vector<double> t;
  const auto start = Clock::now();
  while (t.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < g_min_time) {
    auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    if (t.size() >= 100000) break;
  }
  std::sort(t.begin(), t.end());
  *reps_out = int(t.size());
  return t[t.size() / 2];
}

void report(const char* name, const char* pass, double flops, const std::function<void()>& f) {
  int reps = 0;
  double sec = time_call(f, &reps);
  std::printf("kernel: name=%s pass=%s flops=%.0f sec=%.9f gflops=%.3f reps=%d\n", name, pass, flops, sec,
              flops / sec * 1e-9, reps);
  std::fflush(stdout);
}

std::vector<float> random_vec(size_t n, Rng* rng) {
  std::vector<float> v(n);
  for (auto& x : v) x = rng_uniform(rng) * 2.0f - 1.0f;
  return v;
}

// One convolution layer of the net: forward, and backward as the net calls it (conv1 skips dx).
void bench_conv(const char* name, int N, int C, int H, int W, int OC, int K, bool need_dx, Rng* rng) {
  const int OH = H - K + 1, OW = W - K + 1;
  auto x = random_vec(size_t(N) * C * H * W, rng);
  auto w = random_vec(size_t(OC) * C * K * K, rng);
  auto b = random_vec(OC, rng);
  auto dy = random_vec(size_t(N) * OC * OH * OW, rng);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
  std::vector<float> work(conv2d_workspace_floats(N, C, H, W, OC, K, K));
  const double fwd = 2.0 * N * OC * OH * OW * C * K * K;
  report(name, "forward", fwd,
         [&] { conv2d_forward(y.data(), x.data(), w.data(), b.data(), work.data(), N, C, H, W, OC, K, K); });
  report(name, "backward", need_dx ? 2 * fwd : fwd, [&] {
    conv2d_backward(need_dx ? dx.data() : nullptr, dw.data(), db.data(), dy.data(), x.data(), w.data(), work.data(), N,
                    C, H, W, OC, K, K);
  });
}

void bench_linear(const char* name, int N, int IN, int OUT, Rng* rng) {
  auto x = random_vec(size_t(N) * IN, rng);
  auto w = random_vec(size_t(OUT) * IN, rng);
  auto b = random_vec(OUT, rng);
  auto dy = random_vec(size_t(N) * OUT, rng);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
  const double fwd = 2.0 * N * IN * OUT;
  report(name, "forward", fwd, [&] { linear_forward(y.data(), x.data(), w.data(), b.data(), N, IN, OUT); });
  report(name, "backward", 2 * fwd,
         [&] { linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, IN, OUT); });
}

#if BENCH_HAVE_CONVPOOL
// The fused conv -> [Dropout2d scale] -> max_pool 2 -> relu block the net runs (kernels/convpool.h),
// lane-blocked. FLOPs are the dense convolution's (the same numbers as the conv2d rows), so the
// backward rows are "effective" GFLOP/s: the sparse backward skips the zero routed gradients.
void bench_convpool(const char* name, int N, int C, int H, int W, int OC, int K, bool dropout, bool sparse_backward,
                    Rng* rng) {
  const int OH = H - K + 1, OW = W - K + 1, PH = OH / 2, PW = OW / 2, NB = lane_blocks(N);
  auto x = random_vec(size_t(NB) * C * H * W * kLanes, rng);
  for (int nb = 0; nb < NB; ++nb)  // padding lanes are zero
    for (size_t i = 0; i < size_t(C) * H * W; ++i)
      for (int l = 0; l < kLanes; ++l)
        if (nb * kLanes + l >= N) x[(size_t(nb) * C * H * W + i) * kLanes + l] = 0.0f;
  auto w = random_vec(size_t(OC) * C * K * K, rng);
  auto b = random_vec(OC, rng);
  std::vector<float> scale(size_t(N) * OC);
  for (auto& v : scale) v = rng_uniform(rng) < 0.5f ? 0.0f : 2.0f;
  const float* sc = dropout ? scale.data() : nullptr;
  std::vector<float> y(size_t(NB) * OC * PH * PW * kLanes);
  std::vector<uint16_t> sel(size_t(NB) * OC * PH * PW * 4);
  auto dy = random_vec(y.size(), rng);
  std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
  std::vector<float> work(sparse_backward ? conv2d_pool_relu_sparse_workspace_floats(N, C, H, W, OC, K, K) : 1);
  const double fwd = 2.0 * N * OC * OH * OW * C * K * K;
  std::string fused = std::string(name) + "_fused";
  report(fused.c_str(), "forward", fwd, [&] {
    conv2d_pool_relu_forward_n16(y.data(), sel.data(), x.data(), w.data(), b.data(), sc, N, C, H, W, OC, K, K);
  });
  if (sparse_backward) {
    report(fused.c_str(), "backward", 2 * fwd, [&] {
      conv2d_pool_relu_backward_sparse(dx.data(), dw.data(), db.data(), dy.data(), sel.data(), sc, x.data(), w.data(),
                                       work.data(), N, C, H, W, OC, K, K);
    });
  } else {
    report(fused.c_str(), "backward", fwd, [&] {
      conv2d_pool_relu_backward_weights_n16(dw.data(), db.data(), dy.data(), sel.data(), sc, x.data(), N, C, H, W, OC,
                                            K, K);
    });
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int batch = 64, gemm = 2048, threads = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kernel_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch")
      batch = std::atoi(next());
    else if (a == "--min-time")
      g_min_time = std::atof(next());
    else if (a == "--gemm-size")
      gemm = std::atoi(next());
    else if (a == "--threads")
      threads = std::atoi(next());
    else {
      std::fprintf(stderr, "usage: kernel_bench [--batch N] [--min-time SEC] [--gemm-size N] [--threads T]\n");
      return 2;
    }
  }
  openblas_set_num_threads(threads);
  std::printf("blas: config=\"%s\" core=%s threads=%d\n", openblas_get_config(), openblas_get_corename(), threads);

  Rng rng;
  rng_seed(&rng, 1);

  // The reference: one large square sgemm through the project's wrapper.
  {
    auto A = random_vec(size_t(gemm) * gemm, &rng), B = random_vec(size_t(gemm) * gemm, &rng);
    std::vector<float> C(size_t(gemm) * gemm);
    char name[32];
    std::snprintf(name, sizeof name, "sgemm%d", gemm);
    report(name, "forward", 2.0 * gemm * gemm * gemm,
           [&] { sgemm(false, false, gemm, gemm, gemm, 1.0f, A.data(), B.data(), 0.0f, C.data()); });
  }

  // The seed's layers at batch N: conv1 1->10 k5 on 28x28, conv2 10->20 k5 on 12x12,
  // fc1 320->50, fc2 50->10 (backward as the net calls it: conv1 has no dx).
  bench_conv("conv1", batch, 1, 28, 28, 10, 5, false, &rng);
  bench_conv("conv2", batch, 10, 12, 12, 20, 5, true, &rng);
#if BENCH_HAVE_CONVPOOL
  // The fused blocks the net runs instead: conv1 (+pool+relu, dense weight backward),
  // conv2 (+Dropout2d+pool+relu, sparse backward with dx).
  bench_convpool("conv1", batch, 1, 28, 28, 10, 5, false, false, &rng);
  bench_convpool("conv2", batch, 10, 12, 12, 20, 5, true, true, &rng);
#endif
  bench_linear("fc1", batch, 320, 50, &rng);
  bench_linear("fc2", batch, 50, 10, &rng);

  // One whole training step of the net (forward with dropout + backward), no optimizer/comm.
  {
    Net net(batch);
    TorchGenerator torch_rng;  // the Net draws its init and masks from torch's stream, as ./train
    torch_manual_seed(&torch_rng, 42);
    net.init(&torch_rng);
    auto x = random_vec(size_t(batch) * 28 * 28, &rng);
    std::vector<int32_t> target(batch);
    for (int i = 0; i < batch; ++i) target[i] = int32_t(rng_below(&rng, 10));
    const double flops = 2.0 * batch *
                         (10.0 * 576 * 25 * 2                 // conv1 fwd + dw
                          + 20.0 * 64 * 250 * 3               // conv2 fwd + dx + dw
                          + 320.0 * 50 * 3 + 50.0 * 10 * 3);  // fc1, fc2 fwd + dx + dw
    report("net", "step", flops, [&] {
      net.sample_dropout_masks(&torch_rng, batch);
      net.forward(x.data(), batch, true);
      net.backward(target.data(), batch);
    });
  }
  return 0;
}
