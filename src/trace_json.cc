// trace_json: formats timeline records and metadata as Chrome Trace Event Format lines.
#include "src/trace_json.h"

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "src/json_line.h"

namespace {

struct KindInfo {
  const char* name;
  const char* cat;
};

const KindInfo kKinds[size_t(TimelineKind::kCount)] = {
    {"batch read", "data"},
    {"conv1+pool+relu", "forward"},
    {"conv2+dropout2d+pool+relu", "forward"},
    {"fc1+relu+dropout", "forward"},
    {"fc2+log_softmax", "forward"},
    {"fc2+log_softmax backward", "backward"},
    {"fc1+relu+dropout backward", "backward"},
    {"conv2+dropout2d+pool+relu backward", "backward"},
    {"conv1+pool+relu backward", "backward"},
    {"optimizer step", "optimizer"},
    {"test pass", "test"},
    {"checkpoint write", "checkpoint"},
    {"allreduce", "comm"},
    {"allreduce call", "comm"},
    {"allreduce step", "comm"},
    {"bucket exchange", "comm"},
    {"straggler sleep (--straggler, what-if)", "what-if"},
};

void append_int(std::string* out, long long v) {
  char b[24];
  *out += std::string_view(b, size_t(std::to_chars(b, b + sizeof b, v).ptr - b));
}

// {"ph":"X","name":...,"cat":...,"pid":R,"tid":T,"ts":...,"dur":...,"args":{  (args left open)
void open_slice(std::string* out, const std::string& name, const char* cat, const TimelineRecord& r,
                const TraceContext& c) {
  *out += "{\"ph\":\"X\",\"name\":";
  *out += trace_quote(name);
  *out += ",\"cat\":\"";
  *out += cat;
  *out += "\",\"pid\":";
  append_int(out, c.rank);
  *out += ",\"tid\":";
  append_int(out, trace_tid(r.track));
  *out += ",\"ts\":";
  append_us(out, r.begin_ns - c.offset_ns - c.origin_ns);
  *out += ",\"dur\":";
  append_us(out, r.end_ns - r.begin_ns);
  *out += ",\"args\":{\"step\":";
  append_int(out, r.step);
}

// One flow end ('s' at a send, 'f' bound to the enclosing receive slice) on the comm track.
void append_flow(std::string* out, char ph, uint64_t id, int64_t ns, const std::string& name, const TraceContext& c) {
  *out += "{\"ph\":\"";
  *out += ph;
  *out += ph == 'f' ? "\",\"bp\":\"e" : "";
  *out += "\",\"name\":";
  *out += trace_quote(name);
  *out += ",\"cat\":\"allreduce flow\",\"id\":";
  append_int(out, (long long)id);
  *out += ",\"pid\":";
  append_int(out, c.rank);
  *out += ",\"tid\":";
  append_int(out, trace_tid(kCommTrack));
  *out += ",\"ts\":";
  append_us(out, ns - c.offset_ns - c.origin_ns);
  *out += "},\n";
}

void append_gradient_allreduce(std::string* out, const TimelineRecord& r, const TraceContext& c, size_t* patch_at) {
  open_slice(out, "allreduce", "comm", r, c);
  *out += ",\"bytes\":";
  append_int(out, (long long)r.bytes);
  *out += ",\"backend\":" + trace_quote(c.backend);
  *out += ",\"algorithm\":";
  *out += trace_quote(r.call >= 0 ? trace_algorithm_name(r.algorithm) : c.algorithm);
  *out += c.fp16 ? ",\"fp16\":true" : ",\"fp16\":false";
  *out += c.adasum ? ",\"adasum\":true" : ",\"adasum\":false";
  *out += ",\"on_cpu_us\":";
  append_us(out, r.on_cpu_ns);
  *out += ",\"run_delay_us\":";
  append_us(out, r.run_delay_ns);
  *out += ",\"wait_us\":";
  *patch_at = out->size();
  *out += trace_patch(TracePatch{NAN, NAN, NAN, NAN});
  *out += "}},\n";
}

void append_call(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  const std::string alg = trace_algorithm_name(r.algorithm);
  open_slice(out, alg + " allreduce", "comm", r, c);
  *out += ",\"call\":";
  append_int(out, r.call);
  *out += ",\"algorithm\":" + trace_quote(alg) + ",\"bytes\":";
  append_int(out, (long long)r.bytes);
  *out += "}},\n";
}

// "ring reduce-scatter 2 -> rank 3" (or "<- rank 1" for a step that only receives), its slice,
// then the flow ends: 's' for the message sent, 'f' for the one received.
void append_step(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  const std::string alg = trace_algorithm_name(r.algorithm);
  std::string name = alg + " " + (r.phase ? r.phase : "step") + " " + std::to_string(r.algo_step);
  if (r.send_peer >= 0)
    name += " -> rank " + std::to_string(r.send_peer);
  else if (r.recv_peer >= 0)
    name += " <- rank " + std::to_string(r.recv_peer);
  open_slice(out, name, "comm", r, c);
  *out += ",\"call\":";
  append_int(out, r.call);
  *out += ",\"algo_step\":";
  append_int(out, r.algo_step);
  *out += ",\"peer\":";
  append_int(out, r.send_peer);
  *out += ",\"recv_peer\":";
  append_int(out, r.recv_peer);
  *out += ",\"bytes\":";
  append_int(out, (long long)r.bytes);
  *out += ",\"recv_bytes\":";
  append_int(out, (long long)r.recv_bytes);
  *out += ",\"on_cpu_us\":";
  append_us(out, r.on_cpu_ns);
  *out += ",\"run_delay_us\":";
  append_us(out, r.run_delay_ns);
  *out += "}},\n";
  // Both ends 1 ns inside the slice (when it is that long), so each binds to this slice and not
  // to the step before or after it.
  const std::string flow = alg + " message";
  const int64_t inside = r.end_ns - r.begin_ns >= 2 ? 1 : 0;
  if (r.send_peer >= 0)
    append_flow(out, 's', trace_flow_id(r.call, r.algo_step, c.rank, r.send_peer), r.begin_ns + inside, flow, c);
  if (r.recv_peer >= 0)
    append_flow(out, 'f', trace_flow_id(r.call, r.algo_step, r.recv_peer, c.rank), r.end_ns - inside, flow, c);
}

// A part of a bucket's exchange, [begin_ns, end_ns), as a slice inside the bucket's slice.
void append_bucket_part(std::string* out, const TimelineRecord& bucket, const std::string& name, int64_t begin_ns,
                        int64_t end_ns, const TraceContext& c) {
  TimelineRecord part = bucket;
  part.begin_ns = begin_ns;
  part.end_ns = end_ns;
  open_slice(out, name, "comm", part, c);
  *out += ",\"bucket\":";
  append_int(out, bucket.call);
  *out += "}},\n";
}

// "allreduce fc2+fc1 (66240 B)" from start() to the end of the wait on the bucket's track, then
// its "fc2+fc1 send" and "fc2+fc1 wait" parts inside it (between them: in flight, backward runs).
void append_bucket(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  const std::string layers = r.phase ? r.phase : "?";
  open_slice(out, "allreduce " + layers + " (" + std::to_string(r.bytes) + " B)", "comm", r, c);
  *out += ",\"bucket\":";
  append_int(out, r.call);
  *out += ",\"layers\":" + trace_quote(layers) + ",\"bytes\":";
  append_int(out, (long long)r.bytes);
  *out += c.fp16 ? ",\"fp16\":true" : ",\"fp16\":false";
  *out += ",\"sending_us\":";
  append_us(out, r.send_end_ns - r.begin_ns);
  *out += ",\"in_flight_us\":";
  append_us(out, r.wait_begin_ns - r.send_end_ns);
  *out += ",\"waiting_us\":";
  append_us(out, r.end_ns - r.wait_begin_ns);
  *out += "}},\n";
  append_bucket_part(out, r, layers + " send", r.begin_ns, r.send_end_ns, c);
  append_bucket_part(out, r, layers + " wait", r.wait_begin_ns, r.end_ns, c);
}

}  // namespace

size_t trace_patch_size() { return trace_patch(TracePatch{NAN, NAN, NAN, NAN}).size(); }

std::string trace_patch(const TracePatch& p) {
  auto value = [](double v) {
    char b[64];
    if (std::isnan(v) || std::fabs(v) >= 1e12)
      std::snprintf(b, sizeof b, "%*s", int(kPatchValueWidth), "null");
    else
      std::snprintf(b, sizeof b, "%*.3f", int(kPatchValueWidth), v);
    return std::string(b);
  };
  return value(p.wait_us) + ",\"transfer_us\":" + value(p.transfer_us) +
         ",\"descheduled_us\":" + value(p.descheduled_us) + ",\"arrive_us\":" + value(p.arrive_us);
}

void append_trace_record(std::string* out, const TimelineRecord& r, const TraceContext& c, size_t* patch_at) {
  switch (r.kind) {
    case TimelineKind::kGradientAllreduce:
      append_gradient_allreduce(out, r, c, patch_at);
      return;
    case TimelineKind::kAllreduceCall:
      append_call(out, r, c);
      return;
    case TimelineKind::kAllreduceStep:
      append_step(out, r, c);
      return;
    case TimelineKind::kBucketExchange:
      append_bucket(out, r, c);
      return;
    default:
      break;
  }
  const KindInfo& k = kKinds[size_t(r.kind) < size_t(TimelineKind::kCount) ? size_t(r.kind) : 0];
  open_slice(out, k.name, k.cat, r, c);
  *out += "}},\n";
}

std::string trace_process_metadata(int rank, const std::string& host) {
  const std::string pid = std::to_string(rank);
  return "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":" + trace_quote("rank " + pid + " @ " + host) + "}},\n" +
         "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid + ",\"tid\":0,\"args\":{\"sort_index\":" + pid +
         "}},\n";
}

std::string trace_thread_metadata(int rank, int track, const std::string& name) {
  const std::string head = "{\"ph\":\"M\",\"name\":\"";
  const std::string ids = "\",\"pid\":" + std::to_string(rank) + ",\"tid\":" + std::to_string(trace_tid(track));
  return head + "thread_name" + ids + ",\"args\":{\"name\":" + trace_quote(name) + "}},\n" + head +
         "thread_sort_index" + ids + ",\"args\":{\"sort_index\":" + std::to_string(trace_tid(track)) + "}},\n";
}

std::string trace_clock_metadata(const std::vector<int64_t>& offset_ns, const std::vector<int64_t>& bound_ns,
                                 int rounds) {
  std::string s =
      "{\"ph\":\"M\",\"name\":\"clock_sync\",\"pid\":0,\"tid\":0,\"args\":{\"method\":\"ping-pong over the "
      "communicator's sendrecv, best of ";
  s += std::to_string(rounds) + " round trips; ts is rank 0's steady_clock\",\"clock_offsets_us\":[";
  for (size_t i = 0; i < offset_ns.size(); ++i) {
    if (i) s += ",";
    append_us(&s, offset_ns[i]);
  }
  s += "],\"clock_error_bound_us\":[";
  for (size_t i = 0; i < bound_ns.size(); ++i) {
    if (i) s += ",";
    append_us(&s, bound_ns[i]);
  }
  return s + "]}},\n";
}

std::string trace_end(int world_size) {
  return "{\"ph\":\"M\",\"name\":\"timeline_end\",\"pid\":0,\"tid\":0,\"args\":{\"world_size\":" +
         std::to_string(world_size) + "}}\n]\n";
}

int trace_tid(int track) {
  if (track == kCommTrack) return 1000;
  return track < kCommTrack ? 1001 + (bucket_track(0) - track) : track + 1;
}

uint64_t trace_flow_id(int call, int step, int sender, int receiver) {
  // splitmix64 over the four numbers, cut to 53 bits.
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t v :
       {uint64_t(uint32_t(call)), uint64_t(uint32_t(step)), uint64_t(uint32_t(sender)), uint64_t(uint32_t(receiver))}) {
    x ^= v + 0x9E3779B97F4A7C15ull + (x << 6) + (x >> 2);
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
  }
  return x & ((uint64_t(1) << 53) - 1);
}

const char* trace_algorithm_name(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kAuto:
      return "auto";
    case AllreduceAlgorithm::kDirect:
      return "direct";
    case AllreduceAlgorithm::kRing:
      return "ring";
    case AllreduceAlgorithm::kHalvingDoubling:
      return "halving-doubling";
    case AllreduceAlgorithm::kGloo:
      return "gloo";
    case AllreduceAlgorithm::kMpi:
      return "mpi";
  }
  return "unknown";
}

void append_us(std::string* out, int64_t ns) {
  char b[32];
  const uint64_t a = ns < 0 ? uint64_t(-(ns + 1)) + 1 : uint64_t(ns);
  char* p = b;
  if (ns < 0) *p++ = '-';
  p = std::to_chars(p, b + sizeof b - 4, a / 1000).ptr;
  const unsigned frac = unsigned(a % 1000);
  *p++ = '.';
  *p++ = char('0' + frac / 100);
  *p++ = char('0' + frac / 10 % 10);
  *p++ = char('0' + frac % 10);
  *out += std::string_view(b, size_t(p - b));
}

std::string trace_quote(const std::string& s) { return json_quote(s); }
