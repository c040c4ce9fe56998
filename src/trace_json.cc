// trace_json: formats timeline records and metadata as Chrome Trace Event Format lines.
#include "src/trace_json.h"

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "src/json_line.h"
#include "src/allreduce_plan.h"
#include "src/net.h"

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
    {"traffic", "comm"},
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

// One flow end ('s' at a send, 'f' bound to the enclosing receive slice) on the comm track; both
// ends carry the message's args (algorithm step, chunk, bytes, sender and receiver).
void append_flow(std::string* out, char ph, uint64_t id, int64_t ns, const std::string& name, const std::string& args,
                 const TraceContext& c) {
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
  *out += ",\"args\":{" + args + "}},\n";
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

// The cost a call's steps had on this rank beside its closed form and the alpha-beta model's time
// (our own algorithms; the libraries' report no steps).
void append_call_cost(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  *out += ",\"messages\":";
  append_int(out, r.messages);
  *out += ",\"bytes_sent\":";
  append_int(out, (long long)r.call_sent);
  *out += ",\"bytes_received\":";
  append_int(out, (long long)r.call_received);
  const size_t elem = r.elements ? r.bytes / r.elements : 0;
  const AllreduceCost cost =
      allreduce_cost(r.algorithm, c.world_size, c.rank, r.elements, elem, c.alpha_us, c.beta_us_per_byte);
  if (cost.formula.empty()) return;
  *out += ",\"closed_form\":" + trace_quote(cost.formula) + ",\"closed_form_messages\":";
  append_int(out, cost.messages);
  *out += ",\"closed_form_bytes_sent\":";
  append_int(out, (long long)cost.sent);
  *out += ",\"closed_form_bytes_received\":";
  append_int(out, (long long)cost.received);
  if (c.alpha_us <= 0) return;
  *out += ",\"alpha_beta\":" + trace_quote(cost.model) + ",\"predicted_us\":";
  append_us(out, int64_t(cost.predicted_us * 1e3));
  *out += ",\"measured_us\":";
  append_us(out, r.end_ns - r.begin_ns);
}

void append_call(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  const std::string alg = trace_algorithm_name(r.algorithm);
  open_slice(out, alg + " allreduce", "comm", r, c);
  *out += ",\"call\":";
  append_int(out, r.call);
  *out += ",\"algorithm\":" + trace_quote(alg) + ",\"bytes\":";
  append_int(out, (long long)r.bytes);
  *out += ",\"world_size\":";
  append_int(out, c.world_size);
  if (r.messages > 0) append_call_cost(out, r, c);
  *out += "}},\n";
}

// ",\"send_lo\":0,\"send_hi\":5460,\"send_layers\":\"conv1.weight+...\"" for one side of a step
// (layers only when the vector is the flat parameter buffer: the gradients).
void append_piece(std::string* out, const char* side, uint64_t lo, uint64_t hi, uint64_t elements) {
  const std::string k = side;
  *out += ",\"" + k + "_lo\":";
  append_int(out, (long long)lo);
  *out += ",\"" + k + "_hi\":";
  append_int(out, (long long)hi);
  if (elements == Net::kNumParams) *out += ",\"" + k + "_layers\":" + trace_quote(layers_covering(lo, hi));
}

// Whether the step is one of our algorithms' steps at this world size (it has a place in its phase).
bool is_algorithm_step(const TimelineRecord& r, const TraceContext& c) {
  const std::string phase = r.phase ? r.phase : "step";
  return phase_position(r.algorithm, c.world_size, r.algo_step).rfind(phase + " ", 0) == 0;
}

// The name of a step's messages, the same on every rank: "ring reduce-scatter 1/3" for a step of
// ours, else (a test's own exchange, or a world size the trace does not know) its algorithm, phase
// and number. Sender and receiver name the message alike, so its two flow ends pair.
std::string message_name(const TimelineRecord& r, const TraceContext& c) {
  const std::string alg = trace_algorithm_name(r.algorithm);
  if (is_algorithm_step(r, c)) return alg + " " + phase_position(r.algorithm, c.world_size, r.algo_step);
  return alg + " " + (r.phase ? r.phase : "step") + " " + std::to_string(r.algo_step);
}

// The step's slice name: its message name, and for a step that is not ours also its peer
// ("ring step 2 -> rank 1"), as the rank's own lane has no other place to say it.
std::string step_name(const TimelineRecord& r, const TraceContext& c) {
  const std::string name = message_name(r, c);
  if (is_algorithm_step(r, c)) return name;
  if (r.send_peer >= 0) return name + " -> rank " + std::to_string(r.send_peer);
  return r.recv_peer >= 0 ? name + " <- rank " + std::to_string(r.recv_peer) : name;
}

// A flow's args: "step":2,"phase":"reduce-scatter","chunk":1,"bytes":21840,"from_rank":0,"to_rank":1.
std::string flow_args(const TimelineRecord& r, int chunk, uint64_t bytes, int from, int to) {
  std::string a = "\"algo_step\":";
  append_int(&a, r.algo_step);
  a += ",\"phase\":" + trace_quote(r.phase ? r.phase : "step") + ",\"chunk\":";
  append_int(&a, chunk);
  a += ",\"parts\":";
  append_int(&a, r.parts);
  a += ",\"bytes\":";
  append_int(&a, (long long)bytes);
  a += ",\"from_rank\":";
  append_int(&a, from);
  a += ",\"to_rank\":";
  append_int(&a, to);
  return a;
}

// "ring reduce-scatter 1/3", its slice with what moved (peers, chunks, element ranges, layers,
// bytes), then the flow ends: 's' for the message sent, 'f' for the one received, each named by
// the message ("ring reduce-scatter 1/3: chunk 0 (21840 B)"), never by a peer, so the two ends
// pair.
void append_step(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  const std::string name = step_name(r, c);
  open_slice(out, name, "comm", r, c);
  *out += ",\"call\":";
  append_int(out, r.call);
  *out += ",\"algorithm\":" + trace_quote(trace_algorithm_name(r.algorithm));
  *out += ",\"phase\":" + trace_quote(r.phase ? r.phase : "step") + ",\"algo_step\":";
  append_int(out, r.algo_step);
  *out += ",\"send_to\":";
  append_int(out, r.send_peer);
  *out += ",\"recv_from\":";
  append_int(out, r.recv_peer);
  *out += ",\"parts\":";
  append_int(out, r.parts);
  *out += ",\"send_chunk\":";
  append_int(out, r.send_chunk);
  *out += ",\"recv_chunk\":";
  append_int(out, r.recv_chunk);
  if (r.send_peer >= 0) append_piece(out, "send", r.send_lo, r.send_hi, r.elements);
  if (r.recv_peer >= 0) append_piece(out, "recv", r.recv_lo, r.recv_hi, r.elements);
  *out += ",\"bytes_sent\":";
  append_int(out, (long long)r.bytes);
  *out += ",\"bytes_received\":";
  append_int(out, (long long)r.recv_bytes);
  *out += ",\"on_cpu_us\":";
  append_us(out, r.on_cpu_ns);
  *out += ",\"run_delay_us\":";
  append_us(out, r.run_delay_ns);
  *out += "}},\n";
  // Both ends 1 ns inside the slice (when it is that long), so each binds to this slice and not
  // to the step before or after it.
  const int64_t inside = r.end_ns - r.begin_ns >= 2 ? 1 : 0;
  const std::string message = message_name(r, c);
  auto flow_name = [&](int chunk, uint64_t bytes) {
    return message + ": chunk " + std::to_string(chunk) + " (" + std::to_string(bytes) + " B)";
  };
  if (r.send_peer >= 0)
    append_flow(out, 's', trace_flow_id(r.call, r.algo_step, c.rank, r.send_peer), r.begin_ns + inside,
                flow_name(r.send_chunk, r.bytes), flow_args(r, r.send_chunk, r.bytes, c.rank, r.send_peer), c);
  if (r.recv_peer >= 0)
    append_flow(out, 'f', trace_flow_id(r.call, r.algo_step, r.recv_peer, c.rank), r.end_ns - inside,
                flow_name(r.recv_chunk, r.recv_bytes), flow_args(r, r.recv_chunk, r.recv_bytes, r.recv_peer, c.rank),
                c);
}

// Other traffic on the comm track ("start-up broadcast: parameters", "clock sync ping-pong", ...).
void append_traffic(std::string* out, const TimelineRecord& r, const TraceContext& c) {
  open_slice(out, r.phase ? r.phase : "traffic", "comm", r, c);
  *out += ",\"bytes\":";
  append_int(out, (long long)r.bytes);
  *out += "}},\n";
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
    case TimelineKind::kTraffic:
      append_traffic(out, r, c);
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
                                 int rounds, double alpha_us, double beta_us_per_byte) {
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
  s += "]";
  if (alpha_us > 0) {
    char b[128];
    std::snprintf(b, sizeof b, ",\"alpha_us\":%.3f,\"beta_ns_per_byte\":%.4f", alpha_us, beta_us_per_byte * 1e3);
    s += b;
  }
  return s + "}},\n";
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
    case AllreduceAlgorithm::kAdasum:
      return "adasum";
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
