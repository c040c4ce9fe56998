// blas: row-major sgemm wrapper over OpenBLAS cblas_sgemm (the only place that knows lda/ldb/ldc).
#include "kernels/blas.h"

#include <dlfcn.h>

#include <cblas.h>

// A is stored (M,K) or, transposed, (K,M); B is stored (K,N) or (N,K); C is (M,N).
// Row-major leading dimensions are the stored row lengths.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B, float beta,
           float* C) {
  if (M <= 0 || N <= 0) return;
  const int lda = trans_a ? M : K;
  const int ldb = trans_b ? K : N;
  const int ldc = N;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda > 0 ? lda : 1, B, ldb > 0 ? ldb : 1, beta, C, ldc);
}

void blas_single_threaded() {
  openblas_set_num_threads(1);
  using Shutdown = int (*)();
  if (auto shutdown = reinterpret_cast<Shutdown>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) shutdown();
}
