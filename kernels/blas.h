// blas: the one wrapper around OpenBLAS cblas_sgemm; owns lda/ldb/ldc for row-major storage.
#pragma once

// C (M,N) = alpha * op(A) (M,K) * op(B) (K,N) + beta * C, all row-major, contiguous.
// op(A) = A^T when trans_a (then A is stored (K,M)); likewise for B (stored (N,K)).
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B, float beta,
           float* C);
