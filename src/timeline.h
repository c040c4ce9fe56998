// timeline: ./train --timeline FILE (or HOROVOD_TIMELINE=FILE): one Chrome Trace Event Format file
// (Perfetto, chrome://tracing) with every rank on rank 0's clock. The hooks below are what
// train_main, train and net call; each is one load of a flag when nothing is being recorded.
//
//   timeline_open      (train_main, before the communicator connects) every rank opens its part:
//                      rank 0 FILE itself, rank N FILE.rank<N>.part on its own host; a path that
//                      cannot be written is this rank's one-line error before any rendezvous.
//   timeline_start     (run_training, connected, before training) clock offsets to rank 0 by
//                      ping-pong (src/clock_sync.h, also the alpha-beta model's alpha and beta),
//                      track metadata, the streaming writer thread.
//   timeline_step      what follows belongs to optimizer step `step` (recorded when inside
//                      --timeline-steps); the test pass and epoch-end writes count as the next step.
//   timeline_begin/end a slice on a compute track; TimelineLayers the fused layer blocks of one
//                      compute slice; timeline_gradient_allreduce the averaging on the comm track.
//   timeline_allreduce_observer  sees our allreduce algorithms' calls and steps (comm/allreduce.h).
//   timeline_overlap_observer    sees --overlap on's bucket exchanges (comm/overlap_observer.h),
//                      each on its own "comm bucket" track (src/timeline_buckets.cc).
//   timeline_finish    (run_training, end) ranks' parts merged into FILE through the communicator.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/communicator.h"
#include "comm/gradient_averaging.h"
#include "comm/overlap_observer.h"
#include "src/clock_sync.h"
#include "src/comm_split.h"
#include "src/options.h"

enum class TimelineKind : uint8_t {
  kBatchRead,
  kConv1Forward,  // conv1 + max_pool + relu
  kConv2Forward,  // conv2 + Dropout2d + max_pool + relu
  kFc1Forward,    // fc1 + relu + dropout
  kFc2Forward,    // fc2 + log_softmax
  kFc2Backward,
  kFc1Backward,
  kConv2Backward,
  kConv1Backward,
  kOptimizerStep,
  kTestPass,
  kCheckpoint,
  kGradientAllreduce,  // average_gradients, on the comm track
  kAllreduceCall,      // one call of allreduce_sum seen by the observer
  kAllreduceStep,      // one step of our ring / halving-doubling
  kBucketExchange,     // one bucket of the overlapped averaging, on its bucket track
  kStragglerSleep,     // --straggler's sleep after backward, on compute track 0
  kTraffic,            // other traffic on the comm track: start-up broadcast, clock sync, metrics
  kCount
};

// Where the trace goes: --timeline, else $HOROVOD_TIMELINE; "" = off. Throws std::runtime_error
// "--timeline FILE: cannot write: <reason>" (or the part's path and rank) when it cannot be opened.
void timeline_open(const Options& opts, const RankInfo& info);
// Collective when the timeline is on (every rank calls it); nothing when off. bucket_layers: the
// overlapped averaging's buckets by their layers ("fc2+fc1", ...), one "comm bucket" track each
// (empty: --overlap off, no bucket tracks).
// clocks: the Trainer's sync (RunShape::clocks), shared with --metrics; nullptr: sync here.
void timeline_start(Communicator& comm, int compute_threads, const GradientAveraging& how,
                    const std::vector<std::string>& bucket_layers = {}, const ClockSync* clocks = nullptr);
// timeline_open found a file to record into (the run will call timeline_start).
bool timeline_requested();
// Collective when on: stops recording, merges every rank's events into FILE, removes the parts.
void timeline_finish(Communicator& comm);

namespace timeline_detail {
extern std::atomic<bool> recording;  // on, started, and the current step is inside the range
int64_t now_ns();
void record_slice(TimelineKind kind, int64_t begin_ns, int64_t end_ns, int track);
}  // namespace timeline_detail

void timeline_step(long long step);

// Now (steady_clock ns) when recording, else 0; pass it to timeline_end.
inline int64_t timeline_begin() {
  return timeline_detail::recording.load(std::memory_order_relaxed) ? timeline_detail::now_ns() : 0;
}
// The slice [begin, now) on compute track `track` (0: the main thread's).
inline void timeline_end(TimelineKind kind, int64_t begin, int track = 0) {
  if (begin != 0) timeline_detail::record_slice(kind, begin, timeline_detail::now_ns(), track);
}
// The gradient allreduce of `floats` gradients on the comm track: [begin, end) and the thread's
// CPU clocks over it (src/comm_split.h's sample, this rank's steady_clock).
void timeline_gradient_allreduce(const CommSample& sample, size_t floats);

// Consecutive layer blocks of one compute slice: each mark(kind) records the time since the
// previous mark, skip() or construction as kind's slice on compute track `slice`.
class TimelineLayers {
 public:
  explicit TimelineLayers(int slice) : slice_(slice), t_(timeline_begin()) {}
  void mark(TimelineKind kind) {
    if (t_ == 0) return;
    const int64_t now = timeline_detail::now_ns();
    timeline_detail::record_slice(kind, t_, now, slice_);
    t_ = now;
  }
  // The time since the previous mark is no block's: the next block starts now (the bucket sends
  // that a BackwardListener ran between two blocks show on their own tracks instead).
  void skip() {
    if (t_ != 0) t_ = timeline_detail::now_ns();
  }

 private:
  int slice_;
  int64_t t_;
};

// Other traffic, [begin, now) on the comm track as a slice named `what` (a string literal) with its
// bytes: the start-up broadcast, the test-metric allreduce, --check-sync's allgather. begin is
// timeline_traffic_begin()'s. Traffic before timeline_start (the start-up broadcast) is kept and
// recorded when the timeline starts as step -1 (when the recorded steps include step 0).
int64_t timeline_traffic_begin();  // now when a timeline is open (started or not), else 0
void timeline_traffic(const char* what, int64_t begin, size_t bytes);

// The observer to hand to allreduce_sum / average_gradients; nullptr when the timeline is off.
AllreduceObserver* timeline_allreduce_observer();
// The observer to hand to OverlappedAveraging::set_observer; nullptr when the timeline is off or
// timeline_start was given no buckets.
OverlapObserver* timeline_overlap_observer();
