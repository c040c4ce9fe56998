// gradient_exchange: the whole-buffer or overlapped average of Net's gradients (see
// gradient_exchange.h).
#include "src/gradient_exchange.h"

namespace {

GradientAveraging averaging_of(const Options& opts, AllreduceAlgorithm algorithm) {
  GradientAveraging how;
  how.predivide_factor = opts.gradient_predivide_factor;
  how.fp16 = opts.fp16_allreduce;
  how.adasum = opts.use_adasum;
  how.algorithm = algorithm;
  return how;
}

// Each parameter tensor of the net as a segment of the flat buffer.
std::vector<Segment> param_segments() {
  std::vector<Segment> segments;
  for (const ParamView& p : Net::kParams) segments.push_back({p.offset, p.count});
  return segments;
}

// Net's backward order (layer 3 = fc2 first) as the overlapped averaging's layer list.
std::vector<Segment> backward_layers() {
  std::vector<Segment> layers;
  for (int layer = Net::kNumLayers - 1; layer >= 0; --layer) {
    const ParamView &w = Net::kParams[2 * layer], &b = Net::kParams[2 * layer + 1];
    layers.push_back({w.offset, w.count + b.count});
  }
  return layers;
}

// --overlap on: each bucket's exchange starts inside backward, finish() ends it before the step;
// where it could not give the whole-buffer call's bits (overlap_refusal), none (the whole buffer).
std::unique_ptr<OverlappedAveraging> overlapped_of(const Options& opts, Communicator& comm, Net& net,
                                                   const GradientAveraging& how) {
  if (!opts.overlap || !overlap_refusal(comm, how, Net::kNumParams).empty()) return nullptr;
  return std::make_unique<OverlappedAveraging>(comm, net.grads.data(), backward_layers(), how);
}

}  // namespace

GradientExchange::GradientExchange(const Options& opts, AllreduceAlgorithm algorithm, Communicator& comm, Net& net)
    : comm_(comm),
      net_(net),
      how_(averaging_of(opts, algorithm)),
      segments_(param_segments()),
      overlapped_(overlapped_of(opts, comm, net, how_)) {
  starter_.averaging = overlapped_.get();
}

void GradientExchange::average(AllreduceObserver* observer) {
  how_.observer = observer;
  if (overlapped_)
    overlapped_->finish();
  else
    average_gradients(comm_, net_.grads.data(), net_.grads.size(), segments_, how_);
}

std::vector<std::string> GradientExchange::bucket_layers() const {
  static const char* const kBackwardNames[Net::kNumLayers] = {"fc2", "fc1", "conv2", "conv1"};
  std::vector<std::string> out;
  if (!overlapped_) return out;
  for (const GradientBucket& b : overlapped_->buckets()) {
    std::string name;
    for (int i = b.first_layer; i <= b.after_layer; ++i)
      name += (name.empty() ? "" : "+") + std::string(kBackwardNames[i]);
    out.push_back(name);
  }
  return out;
}

void GradientExchange::set_overlap_observer(OverlapObserver* observer) {
  if (overlapped_) overlapped_->set_observer(observer);
}
