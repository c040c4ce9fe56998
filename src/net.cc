// net: forward and backward of the seed's MNIST CNN, layer by layer over the kernels/, one batch
// cut into per-thread slices of whole 16-sample lane blocks.
#include "src/net.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/activation.h"
#include "kernels/convpool.h"
#include "kernels/linear.h"
#include "kernels/loss.h"
#include "kernels/sgd.h"
#include "src/timeline.h"

const ParamView Net::kParams[Net::kNumTensors] = {
    {"conv1.weight", 0, 250, {10, 1, 5, 5}},      {"conv1.bias", 250, 10, {10, 0, 0, 0}},
    {"conv2.weight", 260, 5000, {20, 10, 5, 5}},  {"conv2.bias", 5260, 20, {20, 0, 0, 0}},
    {"fc1.weight", 5280, 16000, {50, 320, 0, 0}}, {"fc1.bias", 21280, 50, {50, 0, 0, 0}},
    {"fc2.weight", 21330, 500, {10, 50, 0, 0}},   {"fc2.bias", 21830, 10, {10, 0, 0, 0}},
};

namespace {
// Shapes of the seed's model.
constexpr int kC1 = 10, kC2 = 20, kK = 5, kIn = 28, kA1 = 24, kP1 = 12, kA2 = 8, kP2 = 4;
constexpr int kFlat = kC2 * kP2 * kP2, kHidden = 50, kClasses = 10;
static_assert(kFlat == 320, "fc1 input is 320");
static_assert(kA1 == kIn - kK + 1 && kP1 == kA1 / 2 && kA2 == kP1 - kK + 1 && kP2 == kA2 / 2, "conv/pool shapes");

const float* P(const std::vector<float>& v, int t) { return v.data() + Net::kParams[t].offset; }
float* P(std::vector<float>& v, int t) { return v.data() + Net::kParams[t].offset; }

// Tells the listener that layer's backward is done; the time it takes (--overlap on: a bucket's
// send) is not the next block's backward on the timeline.
void after_layer_done(BackwardListener* done, int layer, TimelineLayers* tl) {
  done->layer_done(layer);
  tl->skip();
}
}  // namespace

// One thread's share of a batch: samples [begin, end), at most cap of them.
// Lane-blocked (blocks,C,H,W,16): xb input, h1b conv1 block output, h2b conv2 block output, with
// sel1/sel2 their max-pool/relu routing masks; row-major (n, features) from h2 on.
struct Net::Slice {
  explicit Slice(int cap) {
    const size_t B = size_t(cap), BL = size_t(lane_blocks(cap)) * kLanes;
    xb.resize(BL * kIn * kIn);
    h1b.resize(BL * kC1 * kP1 * kP1);
    sel1.resize(BL / kLanes * kC1 * kP1 * kP1 * 4);
    h2b.resize(BL * kFlat);
    sel2.resize(BL / kLanes * kFlat * 4);
    h2.resize(B * kFlat);
    h3.resize(B * kHidden);
    d3.resize(B * kHidden);
    f2.resize(B * kClasses);
    g_h1b.resize(h1b.size());
    g_h2b.resize(h2b.size());
    g_h2.resize(h2.size());
    g_h3.resize(h3.size());
    g_f2.resize(f2.size());
    work.resize(conv2d_pool_relu_sparse_workspace_floats(cap, kC1, kP1, kP1, kC2, kK, kK));
  }
  Buffer<float> xb, h1b, h2b, h2, h3, d3, f2;
  Buffer<uint16_t> sel1, sel2;
  Buffer<float> g_h1b, g_h2b, g_h2, g_h3, g_f2, work;
  std::vector<float> grads;  // slices 1.. only; slice 0 writes Net::grads
};

// One slice per thread: finer slices (more, smaller blocks per thread, claimed as they come) cost
// more in the small per-slice fc matrices than they win back in balance (measured: 2 slices per
// thread, 0.53-0.60 s against 0.45-0.57 s an epoch with 2 threads).
static int slice_count(int max_batch, int threads) { return std::max(1, std::min(lane_blocks(max_batch), threads)); }

Net::Net(int max_batch, int threads) : max_batch_(max_batch) {
  if (max_batch < 1) throw std::invalid_argument("Net: max_batch must be >= 1");
  if (threads < 1) throw std::invalid_argument("Net: threads must be >= 1");
  const int blocks = lane_blocks(max_batch);
  threads = std::min(threads, blocks);  // a slice is at least one 16-sample block
  threads_ = threads;
  const int slices = slice_count(max_batch, threads);
  params.assign(kNumParams, 0.0f);
  grads.assign(kNumParams, 0.0f);
  logp_.resize(size_t(max_batch) * kClasses);
  mask2d_.assign(size_t(max_batch) * kC2, 1.0f);
  mask_.assign(size_t(max_batch) * kHidden, 1.0f);
  const int cap = (blocks + slices - 1) / slices * kLanes;
  for (int s = 0; s < slices; ++s) {
    slices_.push_back(std::make_unique<Slice>(std::min(cap, max_batch)));
    if (s > 0) slices_.back()->grads.assign(kNumParams, 0.0f);
  }
  if (threads > 1) team_ = std::make_unique<ThreadTeam>(threads);
}

uint64_t Net::buffer_bytes(int max_batch, int threads) {
  const int blocks = lane_blocks(max_batch);
  threads = std::max(1, std::min(threads, blocks));
  const int slices = slice_count(max_batch, threads);
  const int cap = std::min((blocks + slices - 1) / slices * kLanes, max_batch);
  const uint64_t B = uint64_t(cap), BL = uint64_t(lane_blocks(cap)) * kLanes;
  // Slice's buffers: floats, then the uint16 routing masks.
  const uint64_t slice_floats = BL * (kIn * kIn + 2 * kC1 * kP1 * kP1 + 2 * kFlat) +
                                B * (2 * kFlat + 3 * kHidden + 2 * kClasses) +
                                conv2d_pool_relu_sparse_workspace_floats(cap, kC1, kP1, kP1, kC2, kK, kK);
  const uint64_t slice_u16 = BL / kLanes * (kC1 * kP1 * kP1 + kFlat) * 4;
  const uint64_t net_floats = 2 * uint64_t(kNumParams) + uint64_t(max_batch) * (kClasses + kC2 + kHidden) +
                              uint64_t(slices - 1) * kNumParams;  // slices 1..'s gradients
  return 4 * (net_floats + uint64_t(slices) * slice_floats) + 2 * uint64_t(slices) * slice_u16;
}

Net::~Net() = default;

// torch.nn.init.kaiming_uniform_(w, a=sqrt(5)): bound = sqrt(3) * gain / sqrt(fan_in) with
// gain = sqrt(2 / (1 + a^2)), every step in double as Python computes it.
static double kaiming_uniform_bound(double fan_in) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1 + a * a));
  const double std_dev = gain / std::sqrt(fan_in);
  return std::sqrt(3.0) * std_dev;
}

void Net::init(TorchGenerator* g) {
  const double fan_in[kNumTensors / 2] = {25, 250, 320, 50};  // conv1, conv2, fc1, fc2
  for (int layer = 0; layer < kNumTensors / 2; ++layer) {
    const int w = 2 * layer, b = w + 1;
    const double wb = kaiming_uniform_bound(fan_in[layer]), bb = 1 / std::sqrt(fan_in[layer]);
    torch_uniform_fill(P(params, w), kParams[w].count, -wb, wb, g);
    torch_uniform_fill(P(params, b), kParams[b].count, -bb, bb, g);
  }
}

void Net::sample_dropout_masks(TorchGenerator* g, int n, double p) {
  dropout_make_mask(mask2d_.data(), size_t(n) * kC2, p, g);
  dropout_make_mask(mask_.data(), size_t(n) * kHidden, p, g);
}

// Blocks are dealt in runs of ceil(blocks / threads), so slice 0 (the caller) is never idle.
void Net::slice_range(int s, int n, int* begin, int* end) const {
  const int blocks = lane_blocks(n), T = int(slices_.size());
  const int per = (blocks + T - 1) / T;
  *begin = std::min(n, s * per * kLanes);
  *end = std::min(n, (s + 1) * per * kLanes);
}

bool Net::one_slice(int n) const {
  int begin, end;
  slice_range(0, n, &begin, &end);
  return end == n || !team_;
}

void Net::run_slices(int n, void (*job)(Net*, int, int, int)) {
  for_each_slice(n, [this, job](int s, int begin, int end) { job(this, s, begin, end); });
}

void Net::param_range(int part, size_t* begin, size_t* end) const {
  const size_t T = size_t(threads_), per = (kNumParams / kLanes + T - 1) / T * kLanes;
  *begin = std::min(kNumParams, size_t(part) * per);
  *end = std::min(kNumParams, size_t(part + 1) * per);
}

const float* Net::forward(const float* x, int n, bool dropout, SliceInput* input) {
  if (n < 1 || n > max_batch_)
    throw std::invalid_argument("Net::forward: batch " + std::to_string(n) + " not in [1, " +
                                std::to_string(max_batch_) + "]");
  dropout_ = dropout;
  n_ = n;
  x_ = x;
  input_ = input;
  run_slices(n, &Net::forward_job);
  input_ = nullptr;
  return logp_.data();
}

void Net::forward_job(Net* net, int s, int begin, int end) {
  Slice& S = *net->slices_[s];
  const int n = end - begin;
  const std::vector<float>& prm = net->params;
  const float* mask2d = net->dropout_ ? net->mask2d_.data() + size_t(begin) * kC2 : nullptr;
  TimelineLayers tl(s);  // --timeline: one slice per fused block below
  if (net->input_) {
    net->input_->read(begin, end);
    tl.mark(TimelineKind::kBatchRead);
  }
  // conv1 -> (n,10,24,24); max_pool 2; relu -> h1 (n,10,12,12), lane-blocked
  pack_lanes(S.xb.data(), net->x_ + size_t(begin) * kIn * kIn, n, kIn * kIn);
  conv2d_pool_relu_forward_n16(S.h1b.data(), S.sel1.data(), S.xb.data(), P(prm, 0), P(prm, 1), nullptr, n, 1, kIn, kIn,
                               kC1, kK, kK);
  tl.mark(TimelineKind::kConv1Forward);
  // conv2 -> (n,20,8,8); Dropout2d; max_pool 2; relu -> h2 (n,20,4,4) = view (n,320)
  conv2d_pool_relu_forward_n16(S.h2b.data(), S.sel2.data(), S.h1b.data(), P(prm, 2), P(prm, 3), mask2d, n, kC1, kP1,
                               kP1, kC2, kK, kK);
  unpack_lanes(S.h2.data(), S.h2b.data(), n, kFlat);
  tl.mark(TimelineKind::kConv2Forward);
  // fc1 -> (n,50); relu; dropout
  linear_forward(S.h3.data(), S.h2.data(), P(prm, 4), P(prm, 5), n, kFlat, kHidden);
  relu_forward(S.h3.data(), S.h3.data(), size_t(n) * kHidden);
  const float* fc2_in = S.h3.data();
  if (net->dropout_) {
    dropout_forward(S.d3.data(), S.h3.data(), net->mask_.data() + size_t(begin) * kHidden, size_t(n) * kHidden);
    fc2_in = S.d3.data();
  }
  tl.mark(TimelineKind::kFc1Forward);
  // fc2 -> (n,10); log_softmax
  linear_forward(S.f2.data(), fc2_in, P(prm, 6), P(prm, 7), n, kHidden, kClasses);
  log_softmax_forward(net->logp_.data() + size_t(begin) * kClasses, S.f2.data(), n, kClasses);
  tl.mark(TimelineKind::kFc2Forward);
}

float Net::backward(const int32_t* target, int n, BackwardListener* listener) {
  if (n != n_) throw std::invalid_argument("Net::backward: batch differs from the last forward");
  target_ = target;
  const bool whole_batch_in_one = one_slice(n);
  in_slice_listener_ = whole_batch_in_one ? listener : nullptr;
  run_slices(n, &Net::backward_job);
  in_slice_listener_ = nullptr;
  if (!whole_batch_in_one) sum_slice_gradients(n);
  if (listener && !whole_batch_in_one)
    for (int layer = kNumLayers - 1; layer >= 0; --layer) listener->layer_done(layer);
  return nll_loss_forward(logp_.data(), target, n, kClasses, true);
}

// grads += slices 1..'s gradients (slice 0 wrote grads directly), slices in order for every
// element, each thread summing its own range of the parameters.
void Net::sum_slice_gradients(int n) {
  int used = 0;  // slices that had samples
  for (int s = 0, begin, end; s < int(slices_.size()); ++s) {
    slice_range(s, n, &begin, &end);
    if (begin < end) used = s + 1;
  }
  for_each_param_range([this, used](size_t begin, size_t end) {
    for (int s = 1; s < used; ++s) {
      const float* g = slices_[s]->grads.data();
      for (size_t i = begin; i < end; ++i) grads[i] += g[i];
    }
  });
}

// Gradient of the batch-mean loss restricted to the slice's samples: d(-logp[target])/dlogp
// scaled by 1/n of the whole batch, so the slices' gradients add up to the batch gradient.
void Net::backward_job(Net* net, int s, int begin, int end) {
  Slice& S = *net->slices_[s];
  const int n = end - begin, N = net->n_;
  std::vector<float>& grads = s == 0 ? net->grads : S.grads;
  const std::vector<float>& prm = net->params;
  const float* logp = net->logp_.data() + size_t(begin) * kClasses;
  const int32_t* target = net->target_ + begin;
  const float* mask2d = net->dropout_ ? net->mask2d_.data() + size_t(begin) * kC2 : nullptr;
  TimelineLayers tl(s);  // --timeline: one slice per fused block below
  nll_loss_backward(S.g_f2.data(), target, 1.0f / float(N), n, kClasses, false);
  log_softmax_backward(S.g_f2.data(), S.g_f2.data(), logp, n, kClasses);
  // fc2: d(fc2 input) (n,50)
  const float* fc2_in = net->dropout_ ? S.d3.data() : S.h3.data();
  linear_backward(S.g_h3.data(), P(grads, 6), P(grads, 7), S.g_f2.data(), fc2_in, P(prm, 6), n, kHidden, kClasses);
  tl.mark(TimelineKind::kFc2Backward);
  BackwardListener* const done = s == 0 ? net->in_slice_listener_ : nullptr;
  if (done) after_layer_done(done, 3, &tl);
  if (net->dropout_)
    dropout_backward(S.g_h3.data(), S.g_h3.data(), net->mask_.data() + size_t(begin) * kHidden, size_t(n) * kHidden);
  relu_backward(S.g_h3.data(), S.g_h3.data(), S.h3.data(), size_t(n) * kHidden);
  // fc1: d(h2) (n,320)
  linear_backward(S.g_h2.data(), P(grads, 4), P(grads, 5), S.g_h3.data(), S.h2.data(), P(prm, 4), n, kFlat, kHidden);
  tl.mark(TimelineKind::kFc1Backward);
  if (done) after_layer_done(done, 2, &tl);
  // conv2 block (relu, max_pool, Dropout2d, conv2): d(h1) (n,10,12,12), lane-blocked
  pack_lanes(S.g_h2b.data(), S.g_h2.data(), n, kFlat);
  conv2d_pool_relu_backward_sparse(S.g_h1b.data(), P(grads, 2), P(grads, 3), S.g_h2b.data(), S.sel2.data(), mask2d,
                                   S.h1b.data(), P(prm, 2), S.work.data(), n, kC1, kP1, kP1, kC2, kK, kK);
  tl.mark(TimelineKind::kConv2Backward);
  if (done) after_layer_done(done, 1, &tl);
  // conv1 block (relu, max_pool, conv1): no input gradient needed
  conv2d_pool_relu_backward_weights_n16(P(grads, 0), P(grads, 1), S.g_h1b.data(), S.sel1.data(), nullptr, S.xb.data(),
                                        n, 1, kIn, kIn, kC1, kK, kK);
  tl.mark(TimelineKind::kConv1Backward);
  if (done) after_layer_done(done, 0, &tl);
}
