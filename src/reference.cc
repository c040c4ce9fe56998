// reference: ./reference, the learner's ./train. One file, read top to bottom, that trains the
// seed's network (the Horovod PyTorch MNIST example) by data-parallel momentum SGD on W ranks with
// nothing but plain loops: the same algorithm as ./train, the same random numbers, the same log
// lines, and every number of a step computed where you can see it.
//
//   ./reference --epochs 1                          one process (W = 1)
//   ./launch -np 2 --gloo ./reference --epochs 1    two ranks over Gloo (--mpi: Open MPI)
//
// How it relates to the fast path (./train). Each section below is the plain version of:
//   1. the model's parameters and init   src/net.h (Net::kParams, Net::init), src/torch_streams.h
//   2. the data                          src/sampler.h, src/mnist.h (used from here as they are)
//   3. forward                           src/net.cc forward_job over kernels/convpool.h (fused SIMD
//                                        conv+pool+relu on 16-sample lane blocks) and kernels/linear.h
//   4. backward                          src/net.cc backward_job (the same kernels' backward passes)
//   5. averaging the gradient            comm/gradient_averaging.cc (Horovod's op=Average) over the
//                                        backend's allreduce (comm/backend_gloo.cc, backend_mpi.cc;
//                                        our own ring is comm/allreduce_ring.cc, ./train --allreduce ring)
//   6. momentum SGD                      kernels/sgd.h, called from src/train.cc's train step
//   7. the test pass                     src/train.cc evaluate and the test pass
//   8. flags and dumps (plumbing)        src/options.cc, --dump-params in src/train.cc
//   9. the run: the seed's script        src/train.cc (Trainer: the epochs, the train step),
//                                        src/train_main.cc (main)
// What ./train adds and this file leaves out: threads (a batch cut into slices), SIMD kernels on
// lane-blocked activations, overlapping the allreduce with backward, fp16 and Adasum averaging,
// checkpoints and resume, --inspect, --metrics, the timeline, --num-proc. None of them changes
// the numbers of a step beyond the order of float additions: tests/test_reference.cc finds the
// two programs' parameters within about an ulp of each other after each of 20 steps. Like any two
// summation orders, the runs then drift apart as training amplifies the differences: by the end
// of one epoch the losses part in the third decimal, and the test line reads 0.2125, 93.84% here
// against ./train's 0.2137, 93.82%.
//
// Reading order: top to bottom. Sections 1 to 7 are the parts of a training step in the order a
// step runs them; 8 is plumbing (skip it on a first reading); 9, run(), is the seed's script:
// seed, model, broadcast, then epochs of train() and test(). If you want the story first, read
// run() and come back up. Each section says what it does and what it costs.
//
// Speed: ./reference trains an epoch in about 80 s of one core here (2 GFLOP/s), ./train
// --threads 1 in 1.3 s: the same arithmetic, in SIMD kernels over a memory layout made for them.
//
// Not written out here, because they are not what data-parallel SGD is about: the MNIST file
// reader and the batch normalization (src/mnist.h, src/sampler.h's gather_batch), PyTorch's random
// generator (kernels/torch_generator.h: mt19937 and the draws torch makes from it), the
// DistributedSampler's shuffling (src/sampler.h), the plain-loop layer kernels (the *_naive
// functions of kernels/conv2d.h and kernels/linear.h, and kernels/pool.h, activation.h, loss.h:
// a few loops each; the naive ones sum in double and round once, and the suite checks all of
// them against PyTorch), and the Communicator (comm/communicator.h), whose point-to-point
// exchange() the ring below is built on.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/linear.h"
#include "kernels/loss.h"
#include "kernels/pool.h"
#include "kernels/torch_generator.h"
#include "src/data_dir.h"
#include "src/mnist.h"
#include "src/parse_int.h"
#include "src/safe_file.h"
#include "src/sampler.h"

namespace {

// ---- 1. The model's parameters ------------------------------------------------------------------
// The seed's network, per sample:
//   x (1,28,28) -conv1 5x5-> (10,24,24) -max_pool 2-> (10,12,12) -relu-> h1
//   h1 -conv2 5x5-> (20,8,8) -Dropout2d-> -max_pool 2-> (20,4,4) -relu-> h2, read as 320 values
//   h2 -fc1-> (50) -relu-> -dropout-> -fc2-> (10) -log_softmax-> log-probabilities; loss: NLL.
// All 21,840 parameters live in ONE flat float buffer, in PyTorch's order, and the gradient in a
// second buffer of the same layout: averaging the gradient is then one allreduce of 87,360 bytes
// and the optimizer one loop. Offsets of each tensor in the buffer:
constexpr size_t kConv1W = 0;     // (10,1,5,5)   250
constexpr size_t kConv1B = 250;   // (10)          10
constexpr size_t kConv2W = 260;   // (20,10,5,5) 5000
constexpr size_t kConv2B = 5260;  // (20)          20
constexpr size_t kFc1W = 5280;    // (50,320)   16000
constexpr size_t kFc1B = 21280;   // (50)          50
constexpr size_t kFc2W = 21330;   // (10,50)      500
constexpr size_t kFc2B = 21830;   // (10)          10
constexpr size_t kNumParams = 21840;

// PyTorch's default init, as the example's `model = Net()` draws it right after
// torch.manual_seed(seed): layer by layer, the weight from kaiming_uniform_(a=sqrt(5)), i.e.
// uniform in +-sqrt(3) * gain / sqrt(fan_in) with gain = sqrt(2 / (1 + a^2)), then the bias
// uniform in +-1/sqrt(fan_in). Every rank draws the same numbers from the same seed, and the
// broadcast in run() would make them equal anyway. Cost: 21,840 draws from the generator.
void init_params(float* params, TorchGenerator* gen) {
  struct Layer {
    size_t weight, weight_count, bias, bias_count;
    double fan_in;  // inputs per output: in_channels * kernel area, or in_features
  };
  const Layer layers[] = {{kConv1W, 250, kConv1B, 10, 25},
                          {kConv2W, 5000, kConv2B, 20, 250},
                          {kFc1W, 16000, kFc1B, 50, 320},
                          {kFc2W, 500, kFc2B, 10, 50}};
  for (const Layer& l : layers) {
    const double a = std::sqrt(5.0), gain = std::sqrt(2.0 / (1 + a * a));
    const double weight_bound = std::sqrt(3.0) * (gain / std::sqrt(l.fan_in));
    const double bias_bound = 1 / std::sqrt(l.fan_in);
    torch_uniform_fill(params + l.weight, l.weight_count, -weight_bound, weight_bound, gen);
    torch_uniform_fill(params + l.bias, l.bias_count, -bias_bound, bias_bound, gen);
  }
}

// ---- 2. The data --------------------------------------------------------------------------------
// torch's DistributedSampler (src/sampler.h) shuffles the 60,000 training images with a
// permutation drawn from seed 0 + epoch, the same on every rank, pads it to a multiple of W by
// repeating its head, and gives rank r the positions r, r+W, r+2W, ...: W ranks of batch B see
// exactly the samples one rank of batch W*B would. A batch is the next B of this rank's indices,
// read and normalized to (pixel/255 - 0.1307) / 0.3081 by gather_batch. Cost: B * 784 bytes read.

// Everything one batch computes on the way forward and back, for up to `cap` samples. Shapes are
// per batch of n, row-major, the batch index first.
template <class T>
std::vector<T> per_sample(int cap, int values) {
  return std::vector<T>(size_t(cap) * size_t(values));
}
struct Batch {
  explicit Batch(int capacity) : cap(capacity) {}
  const int cap;
  std::vector<float> x = per_sample<float>(cap, 784);              // (n,1,28,28) the images
  std::vector<int32_t> y = per_sample<int32_t>(cap, 1);            // (n) their labels
  std::vector<float> conv1 = per_sample<float>(cap, 5760);         // (n,10,24,24) conv1's output
  std::vector<float> pool1 = per_sample<float>(cap, 1440);         // (n,10,12,12) after max_pool
  std::vector<int32_t> pool1_at = per_sample<int32_t>(cap, 1440);  // which pixel was each max
  std::vector<float> h1 = per_sample<float>(cap, 1440);            // (n,10,12,12) after relu
  std::vector<float> conv2 = per_sample<float>(cap, 1280);         // (n,20,8,8) conv2's output
  std::vector<float> drop2 = per_sample<float>(cap, 1280);         // (n,20,8,8) after Dropout2d
  std::vector<float> pool2 = per_sample<float>(cap, 320);          // (n,20,4,4) after max_pool
  std::vector<int32_t> pool2_at = per_sample<int32_t>(cap, 320);   // which pixel was each max
  std::vector<float> h2 = per_sample<float>(cap, 320);             // (n,320) after relu
  std::vector<float> fc1 = per_sample<float>(cap, 50);             // (n,50) fc1's output
  std::vector<float> h3 = per_sample<float>(cap, 50);              // (n,50) after relu
  std::vector<float> drop3 = per_sample<float>(cap, 50);           // (n,50) after dropout
  std::vector<float> fc2 = per_sample<float>(cap, 10);             // (n,10) fc2's output
  std::vector<float> logp = per_sample<float>(cap, 10);            // (n,10) log_softmax
  std::vector<float> mask2d = per_sample<float>(cap, 20);          // (n,20) Dropout2d's: 0 or 2
  std::vector<float> mask = per_sample<float>(cap, 50);            // (n,50) dropout's: 0 or 2
  // d_X: the gradient of the loss with respect to X, the same shape as X
  std::vector<float> d_fc2 = per_sample<float>(cap, 10), d_drop3 = per_sample<float>(cap, 50);
  std::vector<float> d_h2 = per_sample<float>(cap, 320), d_conv2 = per_sample<float>(cap, 1280);
  std::vector<float> d_h1 = per_sample<float>(cap, 1440), d_conv1 = per_sample<float>(cap, 5760);
};

// The dropout masks of a training batch, drawn from the same generator as init, in the order the
// example's forward draws them: Dropout2d's noise (n,20,1,1) first, then F.dropout's (n,50).
// Each element is 0 with probability 0.5, else 1/(1-0.5) = 2. Every rank draws its own masks
// from its own copy of the generator; the copies are equal, so the ranks' masks are equal, as in
// the PyTorch example. Cost: n * 70 draws.
void draw_dropout_masks(Batch& b, int n, TorchGenerator* gen) {
  dropout_make_mask(b.mask2d.data(), size_t(n) * 20, 0.5, gen);
  dropout_make_mask(b.mask.data(), size_t(n) * 50, 0.5, gen);
}

// ---- 3. Forward ---------------------------------------------------------------------------------
// The layers one after the other, each a plain loop over the whole batch that writes its output
// into its own buffer (kept: backward needs them). dropout = false in the test pass.
// Cost per sample, in multiply-adds: conv1 10*24*24*25 = 144,000; conv2 20*8*8*250 = 320,000;
// fc1 320*50 = 16,000; fc2 500: 480,500 (0.96 MFLOP), 61.5 MFLOP for a batch of 64. The naive
// conv loops recompute every tap from memory; ./train's fused kernels do the same arithmetic
// 16 samples per vector instruction and never write conv1, pool1, conv2 or drop2 out.
// Written per sample: about 14,500 values (58 KB with the max-pool indices), 3.7 MB for a batch
// of 64, every one read again by backward.
void forward(const float* p, Batch& b, int n, bool dropout) {
  // conv1 (n,1,28,28) -> (n,10,24,24); max_pool 2 -> (n,10,12,12); relu
  conv2d_forward_naive(b.conv1.data(), b.x.data(), p + kConv1W, p + kConv1B, n, 1, 28, 28, 10, 5, 5);
  max_pool2d_forward(b.pool1.data(), b.pool1_at.data(), b.conv1.data(), n, 10, 24, 24, 2);
  relu_forward(b.h1.data(), b.pool1.data(), size_t(n) * 1440);
  // conv2 (n,10,12,12) -> (n,20,8,8); Dropout2d zeroes whole channels (or doubles them);
  // max_pool 2 -> (n,20,4,4); relu. Read as (n,320) from here on.
  conv2d_forward_naive(b.conv2.data(), b.h1.data(), p + kConv2W, p + kConv2B, n, 10, 12, 12, 20, 5, 5);
  const float* conv2_out = b.conv2.data();
  if (dropout) {
    dropout2d_forward(b.drop2.data(), b.conv2.data(), b.mask2d.data(), n * 20, 64);
    conv2_out = b.drop2.data();
  }
  max_pool2d_forward(b.pool2.data(), b.pool2_at.data(), conv2_out, n, 20, 8, 8, 2);
  relu_forward(b.h2.data(), b.pool2.data(), size_t(n) * 320);
  // fc1 (n,320) -> (n,50); relu; dropout
  linear_forward_naive(b.fc1.data(), b.h2.data(), p + kFc1W, p + kFc1B, n, 320, 50);
  relu_forward(b.h3.data(), b.fc1.data(), size_t(n) * 50);
  const float* fc2_in = b.h3.data();
  if (dropout) {
    dropout_forward(b.drop3.data(), b.h3.data(), b.mask.data(), size_t(n) * 50);
    fc2_in = b.drop3.data();
  }
  // fc2 (n,50) -> (n,10); log_softmax
  linear_forward_naive(b.fc2.data(), fc2_in, p + kFc2W, p + kFc2B, n, 50, 10);
  log_softmax_forward(b.logp.data(), b.fc2.data(), n, 10);
}

// ---- 4. Backward --------------------------------------------------------------------------------
// The chain rule, layer by layer in reverse, from the loss L = mean over the batch of
// -logp[target]: each step turns d L / d(output of a layer) into d L / d(its input) and, for
// conv and fc layers, into the gradient of its weight and bias, written into `grad` (the flat
// buffer's layout). Max-pool sends each gradient back to the pixel that was the max; relu and the
// dropouts pass it where they passed the value, scaled as they scaled it. Returns the loss.
// Cost per sample, in multiply-adds: fc2 1,000; fc1 32,000 (input and weight gradients); conv2
// 640,000; conv1 144,000 (no input gradient: x is data): 817,000 (1.63 MFLOP), 105 MFLOP for a
// batch of 64. Forward and backward together: 2.6 MFLOP a sample, 156 GFLOP an epoch over all
// ranks. Note the weight gradients are sums over the batch: conv1's over 64 * 24 * 24 = 36,864
// products each, the longest sums of the step (their order is what ./train changes).
float backward(const float* p, float* grad, Batch& b, int n, bool dropout) {
  // loss and d L / d logp: -1/n at each sample's target, 0 elsewhere; then through log_softmax
  const float loss = nll_loss_forward(b.logp.data(), b.y.data(), n, 10, true);
  nll_loss_backward(b.d_fc2.data(), b.y.data(), 1.0f, n, 10, true);
  log_softmax_backward(b.d_fc2.data(), b.d_fc2.data(), b.logp.data(), n, 10);
  // fc2: weight and bias gradients, and d L / d(its input) (n,50)
  const float* fc2_in = dropout ? b.drop3.data() : b.h3.data();
  linear_backward_naive(b.d_drop3.data(), grad + kFc2W, grad + kFc2B, b.d_fc2.data(), fc2_in, p + kFc2W, n, 50, 10);
  // back through dropout and relu (in place), then fc1: d L / d h2 (n,320)
  float* d_h3 = b.d_drop3.data();
  if (dropout) dropout_backward(d_h3, d_h3, b.mask.data(), size_t(n) * 50);
  relu_backward(d_h3, d_h3, b.h3.data(), size_t(n) * 50);
  linear_backward_naive(b.d_h2.data(), grad + kFc1W, grad + kFc1B, d_h3, b.h2.data(), p + kFc1W, n, 320, 50);
  // back through relu and max_pool (to the max pixel of each window), then Dropout2d: (n,20,8,8)
  relu_backward(b.d_h2.data(), b.d_h2.data(), b.h2.data(), size_t(n) * 320);
  max_pool2d_backward(b.d_conv2.data(), b.d_h2.data(), b.pool2_at.data(), n, 20, 8, 8, 2);
  if (dropout) dropout2d_backward(b.d_conv2.data(), b.d_conv2.data(), b.mask2d.data(), n * 20, 64);
  // conv2: weight and bias gradients, and d L / d h1 (n,10,12,12)
  conv2d_backward_naive(b.d_h1.data(), grad + kConv2W, grad + kConv2B, b.d_conv2.data(), b.h1.data(), p + kConv2W, n,
                        10, 12, 12, 20, 5, 5);
  // back through relu and max_pool: (n,10,24,24); conv1: weight and bias gradients only
  relu_backward(b.d_h1.data(), b.d_h1.data(), b.h1.data(), size_t(n) * 1440);
  max_pool2d_backward(b.d_conv1.data(), b.d_h1.data(), b.pool1_at.data(), n, 10, 24, 24, 2);
  conv2d_backward_naive(nullptr, grad + kConv1W, grad + kConv1B, b.d_conv1.data(), b.x.data(), p + kConv1W, n, 1, 28,
                        28, 10, 5, 5);
  return loss;
}

// ---- 5. Averaging the gradient: a ring allreduce ------------------------------------------------
// After backward every rank holds the gradient of ITS batch. Data-parallel SGD needs the gradient
// of all W batches together, the mean of the W gradients: every rank must end with
// (g_0 + g_1 + ... + g_(W-1)) / W, bit for bit the same on every rank (else their parameters drift).
//
// The ring allreduce sums N values over W ranks with each rank sending only 2(W-1)/W * N values,
// whatever W is. The N values are cut into W chunks (chunk c starts at c*(N/W) + min(c, N%W));
// the ranks form a ring, each sends to its right neighbour r+1 and receives from its left r-1,
// and every step all W links carry one chunk at the same time:
//   reduce-scatter, W-1 steps: at step s rank r sends chunk (r-s) mod W and receives chunk
//     (r-s-1) mod W, adding it to its own copy. A chunk travels once round the ring collecting
//     every rank's values; after W-1 steps rank r holds the whole sum of chunk (r+1) mod W.
//   allgather, W-1 steps: at step s rank r sends chunk (r+1-s) mod W (finished) and receives
//     chunk (r-s) mod W, storing it: after W-1 more steps every rank holds every finished chunk.
// Chunk c is summed in the order ((v_c + v_(c+1)) + v_(c+2)) + ..., one addition by each rank it
// passes, and the allgather only copies: every rank ends with the same bits.
// Cost per rank: 2(W-1) messages of about N/W values, 2(W-1)/W * N values sent and as many
// received. For the gradient (N = 21,840 floats, 87,360 bytes): W = 2, 2 messages, 87,360 bytes
// sent; W = 3, 4 messages, 116,480 bytes; W = 8, 14 messages, 152,880 bytes. A step takes
// 2(W-1) latencies plus about 2 N * 4 bytes / link bandwidth, and (W-1)/W * N additions.
// (./train's default is the backend's own allreduce: for this small gradient Gloo sends every
// rank's whole vector to every other and sums in rank order; same sum, other rounding.)
struct Chunk {
  size_t begin, count;
};
Chunk chunk_of(size_t n, int w, int c) {
  const size_t base = n / size_t(w), extra = n % size_t(w), cc = size_t(c);
  return {cc * base + (cc < extra ? cc : extra), base + (cc < extra ? 1 : 0)};
}

template <class T>
void ring_allreduce_sum(Communicator& comm, T* data, size_t n) {
  const int w = comm.size(), r = comm.rank();
  if (w == 1) return;
  const int right = (r + 1) % w, left = (r - 1 + w) % w;
  auto mod = [w](int c) { return ((c % w) + w) % w; };
  std::vector<T> incoming(n / size_t(w) + 1);
  for (int s = 0; s < w - 1; ++s) {  // reduce-scatter
    const Chunk out = chunk_of(n, w, mod(r - s)), in = chunk_of(n, w, mod(r - s - 1));
    comm.exchange(data + out.begin, out.count * sizeof(T), right, incoming.data(), in.count * sizeof(T), left);
    for (size_t i = 0; i < in.count; ++i) data[in.begin + i] += incoming[i];
  }
  for (int s = 0; s < w - 1; ++s) {  // allgather
    const Chunk out = chunk_of(n, w, mod(r + 1 - s)), in = chunk_of(n, w, mod(r - s));
    comm.exchange(data + out.begin, out.count * sizeof(T), right, data + in.begin, in.count * sizeof(T), left);
  }
}

// Horovod's DistributedOptimizer with op=Average, as ./train does it: one allreduce (sum) of the
// whole gradient buffer, then each value times float(1/W) (Horovod's postscale factor, applied in
// float32). With W = 1 there is nothing to average. Cost: the ring's, plus N multiplications.
void average_gradient(Communicator& comm, float* grad) {
  if (comm.size() == 1) return;
  ring_allreduce_sum(comm, grad, kNumParams);
  const float one_over_w = float(1.0 / comm.size());
  for (size_t i = 0; i < kNumParams; ++i) grad[i] = one_over_w * grad[i];
}

// ---- 6. Momentum SGD ----------------------------------------------------------------------------
// torch.optim.SGD(lr, momentum) without dampening, Nesterov or weight decay: per parameter
//   v = g (the first step), else v = momentum * v + g;   p = p - lr * v.
// The example scales lr by W (Horovod's advice: W ranks of batch B take steps of a batch W*B,
// whose mean gradient is as large as one rank's, so the step is made W times longer); run()
// passes lr * W. Every rank applies the same averaged gradient to the same parameters, so the
// parameters stay identical without ever being sent again. Cost: 4 flops and 5 floats moved
// (3 read, 2 written) per parameter: 87,360 flops, 437 KB.
void sgd_step(float* params, float* velocity, const float* grad, float lr, float momentum, bool first) {
  for (size_t i = 0; i < kNumParams; ++i) {
    velocity[i] = first ? grad[i] : momentum * velocity[i] + grad[i];
    params[i] -= lr * velocity[i];
  }
}

// ---- 7. The test pass ---------------------------------------------------------------------------
// After each epoch: forward without dropout over this rank's share of the 10,000 test images (a
// DistributedSampler again, padded to a multiple of W), the summed -logp[target] and the count of
// right answers (the largest log-probability, the first on a tie), each divided by this rank's
// share, then averaged over the ranks with the same ring (two doubles: 2(W-1) tiny messages) as
// Horovod's metric_average does. Batching does not change the numbers (every sample's forward is
// its own), so the images go through in batches of the training buffers' size. Cost: forward
// only, 0.96 MFLOP an image, 9.6 GFLOP over all ranks.
struct TestResult {
  double loss, accuracy;
};

TestResult test_pass(Communicator& comm, const float* params, Batch& b, const MnistSplit& test,
                     const DistributedSampler& sampler) {
  const std::vector<uint32_t>& idx = sampler.indices();
  double loss_sum = 0, correct = 0;
  for (size_t start = 0; start < idx.size(); start += size_t(b.cap)) {
    const int n = int(std::min(idx.size() - start, size_t(b.cap)));
    gather_batch(b.x.data(), b.y.data(), test, idx.data() + start, n);
    forward(params, b, n, false);
    for (int s = 0; s < n; ++s) {
      const float* row = b.logp.data() + s * 10;
      loss_sum -= double(row[b.y[s]]);
      int best = 0;
      for (int c = 1; c < 10; ++c)
        if (row[c] > row[best]) best = c;
      correct += (best == b.y[s]);
    }
  }
  double m[2] = {loss_sum / double(sampler.size()), correct / double(sampler.size())};
  ring_allreduce_sum(comm, m, 2);
  return {m[0] / comm.size(), m[1] / comm.size()};
}

// ---- 8. Flags and dumps (plumbing) --------------------------------------------------------------
// The subset of ./train's flags a learner needs, same names and defaults, plus two dumps for
// tests/test_reference.cc. A bad flag is one line on stderr and exit status 2.
struct Flags {
  int epochs = 10, batch_size = 64, log_interval = 10;
  double lr = 0.01, momentum = 0.5;
  long long seed = 42, max_steps = -1;  // -1: no limit
  std::string data_dir = "./data";
  bool data_dir_given = false;
  std::string dump_params;  // FILE: rank 0's parameters at the end ("%r" in FILE: every rank's)
  std::string dump_steps;   // DIR: every rank's parameters at the start and after every step
};

const char kUsage[] =
    "usage: reference [--epochs N] [--batch-size N] [--lr LR] [--momentum M] [--seed S]\n"
    "                 [--log-interval N] [--max-steps N] [--data-dir DIR]\n"
    "                 [--dump-params FILE] [--dump-steps DIR]\n"
    "The learner's ./train: the same training with plain loops, one file (src/reference.cc).\n"
    "Run W ranks with ./launch -np W --gloo|--mpi ./reference ...\n"
    "  --epochs N          number of epochs to train (default: 10)\n"
    "  --batch-size N      input batch size for training, per rank (default: 64)\n"
    "  --lr LR             learning rate (default: 0.01), times the number of ranks\n"
    "  --momentum M        SGD momentum (default: 0.5)\n"
    "  --seed S            random seed (default: 42)\n"
    "  --log-interval N    batches between training status lines (default: 10)\n"
    "  --max-steps N       stop after N optimizer steps\n"
    "  --data-dir DIR      MNIST location: DIR/MNIST/raw/ or DIR (default: $BARESGD_DATA_DIR, else ./data)\n"
    "  --dump-params FILE  rank 0 writes its parameters at the end, raw float32 (%r in FILE: every rank)\n"
    "  --dump-steps DIR    every rank writes DIR/step<K>.rank<R>.f32, its parameters after step K\n"
    "                      (K = 0: the start, after the broadcast)\n"
    "  -h, --help          show this help and exit\n";

struct UsageError {
  std::string message;
};

long long int_value(const std::string& flag, const std::string& v, long long lo, long long hi) {
  long long x = 0;
  if (parse_decimal(v, IntSign::kMinus, lo, hi, &x) != IntText::kOk)
    throw UsageError{flag + " needs a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                     v + "'"};
  return x;
}

double number_value(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x) || x < 0)
    throw UsageError{flag + " needs a number >= 0, got '" + v + "'"};
  return x;
}

// --flag value or --flag=value, whole names only. Throws UsageError.
Flags parse_flags(int argc, char** argv, bool* help) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "-h" || flag == "--help") {
      *help = true;
      continue;
    }
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError{flag.rfind("--", 0) == 0 ? flag + " needs a value" : "unexpected argument '" + flag + "'"};
    }
    const long long kMax = 1LL << 40;
    if (flag == "--epochs")
      f.epochs = int(int_value(flag, value, 0, 1 << 20));
    else if (flag == "--batch-size")
      f.batch_size = int(int_value(flag, value, 1, 1 << 20));
    else if (flag == "--lr")
      f.lr = number_value(flag, value);
    else if (flag == "--momentum")
      f.momentum = number_value(flag, value);
    else if (flag == "--seed")
      f.seed = int_value(flag, value, -kMax, kMax);
    else if (flag == "--log-interval")
      f.log_interval = int(int_value(flag, value, 1, 1 << 30));
    else if (flag == "--max-steps")
      f.max_steps = int_value(flag, value, 0, kMax);
    else if (flag == "--data-dir")
      f.data_dir = value;
    else if (flag == "--dump-params")
      f.dump_params = value;
    else if (flag == "--dump-steps")
      f.dump_steps = value;
    else
      throw UsageError{"unknown flag '" + flag + "' (reference --help lists them)"};
    f.data_dir_given = f.data_dir_given || flag == "--data-dir";
  }
  return f;
}

// Raw float32 values to a file (the dumps; not part of the algorithm).
void write_floats(const std::string& path, const float* v, size_t n) {
  std::FILE* file = create_output_stream(path, "dump file", "wb");  // never through a symlink
  const size_t written = std::fwrite(v, sizeof(float), n, file);
  if (std::fclose(file) != 0 || written != n) throw std::runtime_error(path + ": write failed");
}

void dump_step(const Flags& f, int rank, long long step, const float* params) {
  if (f.dump_steps.empty()) return;
  const std::string name = "/step" + std::to_string(step) + ".rank" + std::to_string(rank) + ".f32";
  write_floats(f.dump_steps + name, params, kNumParams);
}

void dump_final(const Flags& f, int rank, const float* params) {
  std::string path = f.dump_params;
  const size_t at = path.find("%r");
  if (at != std::string::npos) path.replace(at, 2, std::to_string(rank));
  if (!path.empty() && (rank == 0 || at != std::string::npos)) write_floats(path, params, kNumParams);
}

// ---- 9. The training run: the seed's script -----------------------------------------------------
// One rank's whole run, as every rank of the Horovod example runs it:
//   hvd.init()                                   make_communicator (from ./launch's environment)
//   torch.manual_seed(seed); model = Net()       seed the generator, init_params
//   broadcast_parameters(root_rank=0)            rank 0's parameters to every rank: one broadcast
//                                                of 87,360 bytes (the optimizer state is still
//                                                empty, so there is nothing else to send)
//   for epoch in 1..epochs: train(epoch); test()
// and each training step of train(epoch): read the batch, draw the dropout masks, forward,
// backward, average the gradient over the ranks, one SGD step, and every log_interval batches
// the example's line (every rank prints its own loss; the test line is rank 0's).
void run(const Flags& f, Communicator& comm, const MnistSplit& train, const MnistSplit& test) {
  const int rank = comm.rank(), world = comm.size();
  TorchGenerator gen;  // torch's default CPU generator: init, iterator seeds, dropout masks
  torch_manual_seed(&gen, uint64_t(f.seed));
  std::vector<float> params(kNumParams), grad(kNumParams), velocity(kNumParams);
  init_params(params.data(), &gen);
  comm.broadcast(params.data(), kNumParams * sizeof(float), 0);
  long long step = 0;
  dump_step(f, rank, step, params.data());

  dump_final(f, rank, params.data());  // written again at the end: a bad path fails before training
  const float lr = float(f.lr * world), momentum = float(f.momentum);
  const uint64_t kSamplerSeed = 0;  // DistributedSampler's default
  DistributedSampler train_sampler(size_t(train.count), world, rank, true, kSamplerSeed);
  DistributedSampler test_sampler(size_t(test.count), world, rank, true, kSamplerSeed);
  Batch b(int(std::min(size_t(f.batch_size), train_sampler.size())));

  bool stopped = false;  // by --max-steps: no test pass after it, no more epochs
  for (int epoch = 1; epoch <= f.epochs; ++epoch) {
    train_sampler.set_epoch(uint64_t(epoch));  // this epoch's shuffle
    // iter(train_loader) draws one int64 from the generator (an unused worker seed); it moves
    // the generator, so the dropout masks after it are PyTorch's only if we draw it too.
    torch_random_int64(&gen);
    const std::vector<uint32_t>& idx = train_sampler.indices();
    const size_t batches = num_batches(idx.size(), size_t(f.batch_size));
    for (size_t batch = 0; batch < batches; ++batch) {
      if (f.max_steps >= 0 && step >= f.max_steps) {
        stopped = true;
        break;
      }
      const size_t first = batch * size_t(f.batch_size);
      const int n = int(std::min(size_t(f.batch_size), idx.size() - first));
      gather_batch(b.x.data(), b.y.data(), train, idx.data() + first, n);
      draw_dropout_masks(b, n, &gen);
      forward(params.data(), b, n, true);
      const float loss = backward(params.data(), grad.data(), b, n, true);
      average_gradient(comm, grad.data());
      sgd_step(params.data(), velocity.data(), grad.data(), lr, momentum, step == 0);
      ++step;
      dump_step(f, rank, step, params.data());
      if (batch % size_t(f.log_interval) == 0)  // the example's line, its batch_idx * len(data)
        std::printf("Train Epoch: %d [%zu/%zu (%.0f%%)]\tLoss: %.6f\n", epoch, batch * size_t(n), idx.size(),
                    100.0 * double(batch) / double(batches), double(loss));
    }
    if (stopped) break;
    torch_random_int64(&gen);  // iter(test_loader), as above
    const TestResult r = test_pass(comm, params.data(), b, test, test_sampler);
    if (rank == 0) std::printf("\nTest set: Average loss: %.4f, Accuracy: %.2f%%\n\n", r.loss, 100.0 * r.accuracy);
  }
  dump_final(f, rank, params.data());
}

}  // namespace

// Flags, data, communicator, run. Exit 2 for a bad flag, 1 for any other failure (one line on
// stderr, no teardown: see src/train_main.cc's run_rank for why), 0 when done.
int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Flags f;
  try {
    bool help = false;
    f = parse_flags(argc, argv, &help);
    if (help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "reference: error: %s\n", e.message.c_str());
    return 2;
  }
  std::unique_ptr<Communicator> comm;
  try {
    f.data_dir = choose_data_dir(f.data_dir_given, f.data_dir, std::getenv("BARESGD_DATA_DIR")).dir;
    const MnistSplit train = load_mnist(f.data_dir, true), test = load_mnist(f.data_dir, false);
    comm = make_communicator(CommOptions{});  // Gloo, MPI or one process, from the environment
    run(f, *comm, train, test);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "reference: error: %s\n", e.what());
    std::fflush(stderr);
    std::_Exit(1);
  }
  return 0;
}
