// gradient_exchange: how ./train's ranks combine their gradients, as Horovod's DistributedOptimizer
// does over Net's flat gradient buffer: the Average (predivide, fp16, --allreduce's algorithm) in
// one call after backward, or with --overlap on in buckets whose exchanges start during backward
// (comm/overlapped_averaging.h) wherever that gives the same bits; and Net's parameter tensors as
// the segments Adasum combines by (src/adasum_step.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/communicator.h"
#include "comm/gradient_averaging.h"
#include "comm/overlapped_averaging.h"
#include "src/net.h"
#include "src/options.h"

class GradientExchange {
 public:
  // With --overlap on (and where overlap_refusal allows) opens a channel per bucket: every rank
  // constructs it at the same point.
  GradientExchange(const Options& opts, AllreduceAlgorithm algorithm, Communicator& comm, Net& net);
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  const GradientAveraging& how() const { return how_; }
  const std::vector<Segment>& segments() const { return segments_; }  // Net::kParams' tensors
  // What to give Net::backward: starts --overlap's bucket exchanges as layers finish (nullptr:
  // the whole buffer is averaged after backward).
  BackwardListener* backward_listener() { return overlapped_ ? &starter_ : nullptr; }
  // net.grads = the average over the ranks (finishing the buckets, or one whole-buffer call);
  // observer (may be null) sees the allreduce.
  void average(AllreduceObserver* observer);
  // --overlap's buckets by their layers in backward order, "fc2+fc1", "conv2", "conv1"; empty
  // for the whole buffer.
  std::vector<std::string> bucket_layers() const;
  // Told each bucket's exchange from now on (nullptr: none). Not owned.
  void set_overlap_observer(OverlapObserver* observer);

 private:
  // Tells the overlapped averaging which of Net's layers (in backward order) backward finished.
  struct BucketStarter : BackwardListener {
    OverlappedAveraging* averaging = nullptr;
    void layer_done(int layer) override { averaging->layer_done(Net::kNumLayers - 1 - layer); }
  };

  Communicator& comm_;
  Net& net_;
  GradientAveraging how_;
  const std::vector<Segment> segments_;
  std::unique_ptr<OverlappedAveraging> overlapped_;  // --overlap on, else none
  BucketStarter starter_;
};
