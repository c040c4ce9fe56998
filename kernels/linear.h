// linear: fully connected layer y = x w^T + b via sgemm (plus a naive reference).
#pragma once

// x (N,IN), w (OUT,IN), b (OUT) -> y (N,OUT)
void linear_forward(float* y, const float* x, const float* w, const float* b, int N, int IN, int OUT);
// dy (N,OUT), x, w -> dx (N,IN) (skipped when nullptr), dw (OUT,IN), db (OUT). Overwrites all.
void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, int N, int IN,
                     int OUT);

void linear_forward_naive(float* y, const float* x, const float* w, const float* b, int N, int IN, int OUT);
void linear_backward_naive(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, int N,
                           int IN, int OUT);
