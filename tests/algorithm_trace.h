// algorithm_trace: a ./train --timeline file of one step of our allreduce algorithms, for the
// report's tests (test_timeline_panels, test_report's browser test): written by the real
// formatter (src/trace_json.cc) from the closed form's steps (src/allreduce_plan.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/allreduce_plan.h"
#include "src/net.h"
#include "src/trace_json.h"

namespace algorithm_trace {

// One step (step 0) of `algorithm` over W ranks and the MNIST gradient, as ./train writes it:
// per rank the gradient "allreduce", the call and the closed form's steps (100 us apart).
inline std::string trace_of(AllreduceAlgorithm a, int w, double clock_bound_us = 0, const std::string& host = "h") {
  std::string out = "[\n";
  for (int r = 0; r < w; ++r) {
    TraceContext c;
    c.rank = r;
    c.world_size = w;
    c.backend = "gloo";
    c.algorithm = "auto";
    out += trace_process_metadata(r, host) + trace_thread_metadata(r, kCommTrack, "comm");
    TimelineRecord call;
    call.kind = TimelineKind::kAllreduceCall;
    call.track = kCommTrack;
    call.algorithm = a;
    call.begin_ns = 1000;
    call.end_ns = 1000 + 100000 * 20;
    call.bytes = Net::kNumParams * 4;
    call.elements = Net::kNumParams;
    TimelineRecord outer = call;
    outer.kind = TimelineKind::kGradientAllreduce;
    outer.call = 0;
    size_t patch = 0;
    append_trace_record(&out, outer, c, &patch);
    for (const PlannedStep& p : planned_steps(a, w, r, Net::kNumParams)) {
      TimelineRecord s = call;
      s.kind = TimelineKind::kAllreduceStep;
      s.algo_step = p.step;
      s.phase = p.phase == "reduce-scatter" ? "reduce-scatter" : p.phase == "allgather" ? "allgather" : "fold";
      s.begin_ns = 1000 + 100000 * (p.step + 1);
      s.end_ns = s.begin_ns + 90000;
      s.send_peer = p.send_to;
      s.recv_peer = p.recv_from;
      s.parts = p.parts;
      s.send_chunk = p.send_chunk;
      s.recv_chunk = p.recv_chunk;
      s.send_lo = p.send_lo;
      s.send_hi = p.send_hi;
      s.recv_lo = p.recv_lo;
      s.recv_hi = p.recv_hi;
      s.bytes = 4 * (p.send_hi - p.send_lo);
      s.recv_bytes = 4 * (p.recv_hi - p.recv_lo);
      append_trace_record(&out, s, c, &patch);
    }
  }
  if (clock_bound_us > 0)
    out += trace_clock_metadata(std::vector<int64_t>(size_t(w), 0),
                                std::vector<int64_t>(size_t(w), int64_t(clock_bound_us * 1000)), 20);
  return out + trace_end(w);
}

}  // namespace algorithm_trace
