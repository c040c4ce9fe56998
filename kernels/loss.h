// loss: log_softmax over classes and the negative log-likelihood loss (mean or sum).
#pragma once
#include <cstdint>

// x (N,C) -> y (N,C) = x - logsumexp(x) per row (numerically stable).
void log_softmax_forward(float* y, const float* x, int N, int C);
// dy (N,C), y (N,C) (forward output) -> dx (N,C) = dy - exp(y) * sum(dy). dx may alias dy.
void log_softmax_backward(float* dx, const float* dy, const float* y, int N, int C);

// logp (N,C), target (N) in [0,C) -> loss = -sum logp[n,target[n]] (/ N when mean).
float nll_loss_forward(const float* logp, const int32_t* target, int N, int C, bool mean);
// dloss (scalar upstream gradient) -> dlogp (N,C) (overwritten): -dloss (/N when mean) at target.
void nll_loss_backward(float* dlogp, const int32_t* target, float dloss, int N, int C, bool mean);
