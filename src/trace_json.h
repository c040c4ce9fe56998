// trace_json: the Chrome Trace Event Format text of the timeline, one JSON object per line, each
// line ending in ",\n" (a JSON array that a killed run leaves open; Perfetto and chrome://tracing
// accept it, and stripping the last "," and adding "]" makes it strict JSON). Pure functions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/timeline_record.h"

// What turns one rank's raw records into trace events on rank 0's clock.
struct TraceContext {
  int rank = 0;
  int64_t offset_ns = 0;  // this rank's steady_clock minus rank 0's
  int64_t origin_ns = 0;  // rank 0's clock at ts = 0
  std::string backend;    // "single", "gloo", "mpi"
  std::string algorithm;  // the gradient allreduce's, until an observed call names it
  bool fp16 = false, adasum = false;
  int world_size = 1;
  double alpha_us = 0, beta_us_per_byte = 0;  // the alpha-beta model's, measured by the clock sync
};

// Width of each of the values a gradient allreduce line leaves to be filled in at the merge
// (wait_us, transfer_us, descheduled_us, arrive_us: src/comm_split.h; "null" right-aligned
// until then, JSON whitespace before it).
constexpr size_t kPatchValueWidth = 16;
struct TracePatch {
  double wait_us, transfer_us, descheduled_us, arrive_us;  // NaN: "null"
};
// The bytes from the wait_us value through the arrive_us value, each kPatchValueWidth wide.
// Always trace_patch_size() long.
std::string trace_patch(const TracePatch& p);
size_t trace_patch_size();

// Appends r's event line(s) to out. For a gradient allreduce, *patch_at is the offset in out of
// its patch region (see trace_patch); otherwise it is left alone.
void append_trace_record(std::string* out, const TimelineRecord& r, const TraceContext& c, size_t* patch_at);

// Metadata lines: the rank's process track "rank N @ host", its thread tracks, the clocks.
std::string trace_process_metadata(int rank, const std::string& host);
std::string trace_thread_metadata(int rank, int track, const std::string& name);
// alpha_us, beta_us_per_byte: the alpha-beta model's, from the same ping-pong (left out when 0).
std::string trace_clock_metadata(const std::vector<int64_t>& offset_ns, const std::vector<int64_t>& bound_ns,
                                 int rounds, double alpha_us = 0, double beta_us_per_byte = 0);
// The last element of a merged file: "{...}\n]\n" (no trailing comma).
std::string trace_end(int world_size);

// Thread id of a track: compute slice s -> s + 1, the comm track -> 1000, bucket b's -> 1001 + b.
int trace_tid(int track);
// The id both ends of one algorithm step's message compute (< 2^53, a JSON-safe integer).
uint64_t trace_flow_id(int call, int step, int sender, int receiver);
const char* trace_algorithm_name(AllreduceAlgorithm a);
// ns as microseconds with 3 decimals ("-1.250", "12.000").
void append_us(std::string* out, int64_t ns);
// s as a JSON string literal (quotes, escapes): json_quote (src/json_line.h), the one escaper.
std::string trace_quote(const std::string& s);
