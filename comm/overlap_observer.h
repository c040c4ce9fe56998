// overlap_observer: what the overlapped averaging (comm/overlapped_averaging.h) tells an observer
// about each bucket's exchange, once per bucket and optimizer step, when its wait has ended — the
// bucket's place in the flat gradient and in the backward-order layer list, its bytes on the wire,
// and the three moments of its exchange. Like AllreduceObserver (comm/allreduce.h) it lets src/
// (the timeline) see comm/ without comm/ depending on src/.
#pragma once
#include <cstddef>
#include <cstdint>

// One bucket's exchange in one step. Times are std::chrono::steady_clock on this rank, nanoseconds.
struct BucketExchange {
  int bucket = 0;                       // index into OverlappedAveraging::buckets()
  int first_layer = 0, last_layer = 0;  // the backward-order layers it holds, first..last
  size_t bytes = 0;                     // this rank's bucket on the wire (fp16: 2 bytes a gradient)
  int64_t send_begin_ns = 0;            // start() called: backward has produced the bucket
  int64_t send_end_ns = 0;              // start() returned: this rank's bucket handed to the channel
  int64_t wait_begin_ns = 0;            // finish() began waiting for the peers' buckets
  int64_t wait_end_ns = 0;              // every rank's bucket is here (before the sum)
};

class OverlapObserver {
 public:
  virtual ~OverlapObserver() = default;
  // Called on the training thread at the end of each bucket's wait.
  virtual void on_bucket(const BucketExchange& e) = 0;
};
