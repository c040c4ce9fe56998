// overlapped_averaging: the buckets, their exchanges, and the same arithmetic as
// average_gradients (comm/gradient_averaging.cc) applied per bucket:
//   float32: b = float(1/f) * g into the bucket's send buffer; gather every rank's b; sum in rank
//     order ((b0 + b1) + b2) + ...; g = float(f/size) * sum.
//   fp16: h = half(g); h = half(float(1/f) * h); gather; sum in rank order, each addition in float
//     rounded to half; h = half(float(f/size) * h); g = float(h).
// Each step is per element, so cutting the buffer into buckets cannot change a bit; the sum's
// order is the whole-buffer allreduce's wherever Communicator::sums_in_rank_order holds (any two
// ranks: float addition commutes).
#include "comm/overlapped_averaging.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "comm/allreduce_internal.h"
#include "comm/half_float.h"

// The observer's clock (BucketExchange's times) is the allreduce observers' one.
using allreduce_detail::now_ns;

std::vector<GradientBucket> plan_buckets(const std::vector<Segment>& backward_layers, size_t elem_bytes,
                                         size_t min_bytes) {
  std::vector<GradientBucket> out;
  bool open = false;
  GradientBucket cur{0, 0, -1, 0};
  for (size_t i = 0; i < backward_layers.size(); ++i) {
    const Segment& l = backward_layers[i];
    if (open && l.offset + l.count != cur.offset) {  // not adjacent below the bucket: close it
      out.push_back(cur);
      open = false;
    }
    if (!open) cur = GradientBucket{l.offset + l.count, 0, -1, int(i)};
    open = true;
    cur.offset = l.offset;
    cur.count += l.count;
    cur.after_layer = int(i);
    if (cur.count * elem_bytes >= min_bytes) {
      out.push_back(cur);
      open = false;
    }
  }
  if (open) out.push_back(cur);
  return out;
}

std::string overlap_refusal(const Communicator& comm, const GradientAveraging& how, size_t n) {
  if (how.adasum) return "--use-adasum combines the whole buffer";
  if (how.algorithm != AllreduceAlgorithm::kAuto) return "--allreduce is not auto";
  if (comm.size() == 1) return "one rank exchanges nothing";
  if (!comm.sums_in_rank_order(n * (how.fp16 ? 2 : 4)))
    return std::string("the ") + comm.backend_name() + " allreduce of " + std::to_string(comm.size()) +
           " ranks does not sum in rank order";
  return "";
}

struct OverlappedAveraging::Bucket {
  GradientBucket where;
  std::unique_ptr<GatherChannel> channel;
  std::vector<float> f32;      // float32: the prescaled send buffer, then the sum
  std::vector<half_bits> f16;  // fp16: the same in halves
  bool started = false;
  BucketExchange times;  // filled only when an observer is set
};

OverlappedAveraging::OverlappedAveraging(Communicator& comm, float* grad, const std::vector<Segment>& backward_layers,
                                         const GradientAveraging& how)
    : comm_(comm), grad_(grad), fp16_(how.fp16) {
  const double f = how.predivide_factor;
  if (!(f > 0) || !std::isfinite(f))
    throw std::invalid_argument("--gradient-predivide-factor must be a positive number, got " + std::to_string(f));
  pre_ = 1.0 / f;
  post_ = f / comm.size();
  const size_t elem = fp16_ ? sizeof(half_bits) : sizeof(float);
  buckets_ = plan_buckets(backward_layers, elem);
  for (const GradientBucket& g : buckets_) {
    auto b = std::make_unique<Bucket>();
    b->where = g;
    b->times.bucket = int(state_.size());
    b->times.first_layer = g.first_layer;
    b->times.last_layer = g.after_layer;
    b->times.bytes = g.count * elem;
    (fp16_ ? b->f16.resize(g.count) : b->f32.resize(g.count));
    b->channel = comm.open_gather_channel(g.count * elem);
    state_.push_back(std::move(b));
  }
}

OverlappedAveraging::~OverlappedAveraging() = default;

void OverlappedAveraging::start(Bucket& b) {
  if (observer_) b.times.send_begin_ns = now_ns();
  const float* g = grad_ + b.where.offset;
  const size_t n = b.where.count;
  if (fp16_) {
    floats_to_halves(b.f16.data(), g, n);
    scale_half_buffer(b.f16.data(), n, pre_);
    b.channel->start(b.f16.data());
  } else {
    std::memcpy(b.f32.data(), g, n * sizeof(float));
    scale_buffer(b.f32.data(), n, pre_);
    b.channel->start(b.f32.data());
  }
  b.started = true;
  if (observer_) b.times.send_end_ns = now_ns();
}

void OverlappedAveraging::complete(Bucket& b) {
  if (!b.started) start(b);
  if (observer_) b.times.wait_begin_ns = now_ns();
  const void* all = b.channel->wait();
  if (observer_) {
    b.times.wait_end_ns = now_ns();
    observer_->on_bucket(b.times);
  }
  b.started = false;
  const size_t n = b.where.count;
  const int size = comm_.size();
  float* g = grad_ + b.where.offset;
  if (fp16_) {
    const half_bits* h = static_cast<const half_bits*>(all);
    half_bits* s = b.f16.data();
    std::memcpy(s, h, n * sizeof(half_bits));
    for (int r = 1; r < size; ++r) {
      const half_bits* x = h + size_t(r) * n;
      for (size_t i = 0; i < n; ++i) s[i] = float_to_half(half_to_float(s[i]) + half_to_float(x[i]));
    }
    scale_half_buffer(s, n, post_);
    halves_to_floats(g, s, n);
    return;
  }
  const float* v = static_cast<const float*>(all);
  std::memcpy(g, v, n * sizeof(float));
  for (int r = 1; r < size; ++r) {
    const float* x = v + size_t(r) * n;
    for (size_t i = 0; i < n; ++i) g[i] = g[i] + x[i];
  }
  scale_buffer(g, n, post_);
}

void OverlappedAveraging::layer_done(int i) {
  for (auto& b : state_)
    if (b->started) b->channel->progress();
  for (auto& b : state_)
    if (!b->started && b->where.after_layer == i) start(*b);
}

void OverlappedAveraging::finish() {
  for (auto& b : state_) complete(*b);
}
