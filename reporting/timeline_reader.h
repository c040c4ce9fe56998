// timeline_reader: a Chrome Trace Event file (./train --timeline) as slices per process, and a
// small per-rank summary of them. Reads the array form "[ {...}, ..." also when a killed run left
// it without its closing ']' (with a trailing comma, or a last event cut short), and the object
// form {"traceEvents":[...], ...}. Pure parser with a thin file shell; errors are TimelineError
// with one line naming the file.
#pragma once
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "reporting/trace_args.h"

struct TimelineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TraceSlice {
  long pid = 0, tid = 0;
  std::string name, cat;
  double ts_us = 0, dur_us = 0;
  long step = -1;  // args.step, -1 when absent
  TraceArgs args;  // every arg as written, in file order
};

// One "s" (send) event matched with the "f" (receive) of the same id: an arrow between tracks.
struct TraceFlow {
  std::string name;
  long from_pid = 0, from_tid = 0, to_pid = 0, to_tid = 0;
  double from_ts_us = 0, to_ts_us = 0;
  TraceArgs args;  // the send end's args (chunk, bytes, ...)
};

// Slices and flows are deques: a large trace's millions of them grow without being copied.
struct Timeline {
  std::deque<TraceSlice> slices;                              // "X" events, and "B"/"E" pairs matched per thread
  std::map<long, std::string> process_names;                  // from "M" process_name events
  std::map<std::pair<long, long>, std::string> thread_names;  // (pid, tid) from "M" thread_name events
  std::deque<TraceFlow> flows;                                // "s"/"f" pairs; an end without its other end is dropped
  size_t events = 0;                                          // trace events read (every phase)
  bool cut_short = false;                                     // the file ended inside the event array
  size_t unclosed = 0;                                        // "B" events with no "E" (dropped)
  std::vector<double> clock_bound_us;                         // per rank, from the "clock_sync" metadata (empty: none)
};

// The value of arg key of a slice or flow ("" when absent).
std::string arg_of(const std::vector<std::pair<std::string, std::string>>& args, const std::string& key);
std::string arg_of(const TraceArgs& args, const std::string& key);
// Arg key of a slice as a whole decimal integer, or fallback when it is absent or not one.
long arg_long(const TraceSlice& s, const char* key, long fallback);

// scan_plain false: every event read by nlohmann's parser, none by the plain scanner
// (reporting/json_plain.h); the tests and the fuzzer check that both readings agree.
Timeline parse_timeline_text(const std::string& text, const std::string& filename, bool scan_plain = true);
// Reads path and parses it; an unreadable file is "cannot read PATH: reason".
Timeline read_timeline_file(const std::string& path);

// Time in one slice name on one process.
struct SliceTotal {
  std::string name;
  size_t count = 0;
  double total_us = 0;
};

struct ProcessSummary {
  long pid = 0;
  std::string label;  // the process_name ("rank 0 @ hpc01"), or "pid N"
  size_t slices = 0;
  double span_us = 0;               // first slice start to last slice end
  std::vector<SliceTotal> by_name;  // every slice name, most total time first
};

// The args.step values of the slices, ascending, once each.
std::vector<long> recorded_steps(const Timeline& t);

// One summary per process, in pid order.
std::vector<ProcessSummary> summarize_timeline(const Timeline& t);
