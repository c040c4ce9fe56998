// blas: the one wrapper around OpenBLAS cblas_sgemm (owns lda/ldb/ldc for row-major storage) and
// OpenBLAS's own thread count.
#pragma once

// C (M,N) = alpha * op(A) (M,K) * op(B) (K,N) + beta * C, all row-major, contiguous.
// op(A) = A^T when trans_a (then A is stored (K,M)); likewise for B (stored (N,K)).
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B, float beta,
           float* C);

// OpenBLAS computes on the calling thread only from now on (openblas_set_num_threads(1)), and the
// pool of workers it started when it was loaded (one per CPU beyond the first, each spinning in
// sched_yield for about 2^28 cycles before it sleeps) is stopped now, so that it takes no core from
// the net's own threads in the first tenth of a second of training. Its shutdown call
// (blas_thread_shutdown_, the one OpenBLAS runs before a fork) is looked up at run time: a BLAS
// build without it keeps its pool, idle.
void blas_single_threaded();
