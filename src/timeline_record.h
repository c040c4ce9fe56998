// timeline_record: one raw timeline event as the hot path stores it (no formatting), shared by
// the recorder (src/timeline.cc), the allreduce observer and the JSON formatter (src/trace_json.h).
#pragma once
#include <cstdint>

#include "src/timeline.h"

constexpr int kCommTrack = -1;  // the "comm" thread track; compute slice s is track s
// The "comm bucket b" track of the overlapped averaging's bucket b: -2, -3, ...
constexpr int bucket_track(int bucket) { return -2 - bucket; }

struct TimelineRecord {
  int64_t begin_ns = 0, end_ns = 0;  // this rank's steady_clock
  int64_t step = 0;                  // the optimizer step it belongs to
  uint64_t bytes = 0;                // allreduce: bytes reduced; algorithm step: bytes sent
  uint64_t recv_bytes = 0;           // algorithm step: bytes received
  const char* phase = nullptr;       // algorithm step: "reduce-scatter", ... (a string literal);
                                     // bucket: its layers, "fc2+fc1" (alive until the process ends);
                                     // traffic: what moved, "start-up broadcast: parameters" (a literal)
  int64_t send_end_ns = 0;           // bucket: start() returned (begin_ns: it was called)
  int64_t wait_begin_ns = 0;         // bucket: its wait began (end_ns: it ended)
  int64_t on_cpu_ns = 0;             // gradient allreduce, algorithm step: the thread's CPU time over it
  int64_t run_delay_ns = 0;          // ... and its time waiting for a CPU (comm/thread_cpu_clock.h)
  int32_t call = 0;                  // observer's call number (call and step records); bucket's index
  int32_t algo_step = 0;             // algorithm step within the call
  int32_t send_peer = -1, recv_peer = -1;
  int32_t track = 0;
  // algorithm step: the piece sent and received (comm/allreduce.h's AllreduceStep), elements
  int32_t parts = 0, send_chunk = -1, recv_chunk = -1;
  uint64_t send_lo = 0, send_hi = 0, recv_lo = 0, recv_hi = 0;
  uint64_t elements = 0;  // algorithm step and call: the length of the vector summed
  // call: what its steps sent and received on this rank (messages: steps that sent)
  uint64_t call_sent = 0, call_received = 0;
  int32_t messages = 0;
  TimelineKind kind = TimelineKind::kBatchRead;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto;
};

namespace timeline_detail {
// Appends r to the calling thread's buffer (lock-free; dropped and counted when full).
void push(const TimelineRecord& r);
// The current optimizer step (set by timeline_step).
long long current_step();
}  // namespace timeline_detail
