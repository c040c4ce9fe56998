// fuzz_timeline: libFuzzer target for ./report's trace reader (reporting/timeline_reader.h:
// parse_timeline_text, summarize_timeline, recorded_steps) and the lane chart drawn from what it
// reads (reporting/timeline_lanes.h: default_lane_step, timeline_lanes_svg; reporting/
// algorithm_steps.h: algorithm_steps_svg).
//
// Input: the bytes are the trace file's text.
// Contract checked: parse_timeline_text returns or throws TimelineError, nothing else, and
// exactly what it returns or throws with every event read by nlohmann's parser (no plain scanner:
// reporting/json_plain.h); every
// error is one line that starts with the file name; slices have a duration >= 0 and a step that
// is -1 or >= 0; every flow pairs one "s" with one "f" (at most half the events); the summary
// counts every slice once (its per-process counts add up to the number of slices, and each
// process's per-name counts add up to its slices); recorded_steps is ascending, once each, every
// one a slice's step; default_lane_step is -1 exactly when there is none, else one of them. For
// the default, first and last recorded step the SVG is one <svg id="timeline-lanes"> element
// with one <rect class="slice"> per slice of that step (an algorithm's call slice excepted: the
// "allreduce" around it shows it), a lane per track holding one, no more arrows than flows, as
// many <title> as </title>, and every coordinate a finite number; the algorithm panels are ""
// or one <svg id="algorithm-steps"> with balanced titles and finite coordinates.
//
// Build: make fuzz (build-fuzz/fuzz_timeline); run: .ci/fuzz.sh
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "reporting/algorithm_steps.h"
#include "reporting/timeline_lanes.h"
#include "reporting/timeline_reader.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// Every x=, y=, width=, height=, x1=, ... attribute holds a finite number. Text from the file is
// escaped (a quote becomes &quot;), so these patterns only match real attributes.
void check_coordinates(const std::string& svg) {
  for (const char* attr : {" x=\"", " y=\"", " width=\"", " height=\"", " x1=\"", " y1=\"", " x2=\"", " y2=\""}) {
    const std::string a = attr;
    for (size_t p = svg.find(a); p != std::string::npos; p = svg.find(a, p + 1)) {
      const char* start = svg.c_str() + p + a.size();
      char* end = nullptr;
      const double v = std::strtod(start, &end);
      FUZZ_CHECK(end != start && *end == '"');
      FUZZ_CHECK(std::isfinite(v));
    }
  }
}

bool has_arg(const TraceSlice& s, const char* key) {
  for (const auto& a : s.args)
    if (a.first == key) return true;
  return false;
}

// An algorithm's call slice, which the lane chart leaves out (the "allreduce" around it shows it).
bool is_call_slice(const TraceSlice& s) {
  return s.cat == "comm" && has_arg(s, "call") && has_arg(s, "algorithm") && !has_arg(s, "algo_step") &&
         s.name != "allreduce";
}

void check_lanes(const Timeline& t, long step) {
  const std::string svg = timeline_lanes_svg(t, step);
  FUZZ_CHECK(svg.rfind("<svg id=\"timeline-lanes\"", 0) == 0);
  FUZZ_CHECK(count(svg, "<svg") == 1 && count(svg, "</svg>") == 1);
  size_t of_step = 0;
  std::set<std::pair<long, long>> tracks;
  for (const TraceSlice& s : t.slices)
    if (s.step == step && !is_call_slice(s)) ++of_step, tracks.insert({s.pid, s.tid});
  FUZZ_CHECK(count(svg, "class=\"slice\"") == of_step);
  FUZZ_CHECK(count(svg, "<rect class=\"lane\"") == tracks.size());
  FUZZ_CHECK(count(svg, "<line class=\"flow") <= t.flows.size());
  FUZZ_CHECK(count(svg, "<title>") == count(svg, "</title>"));
  check_coordinates(svg);
  // the algorithm's panels: none, or one <svg id="algorithm-steps"> with finite coordinates
  const std::string panels = algorithm_steps_svg(t, step);
  if (panels.empty()) return;
  FUZZ_CHECK(panels.rfind("<svg id=\"algorithm-steps\"", 0) == 0);
  FUZZ_CHECK(count(panels, "<svg") == 1 && count(panels, "</svg>") == 1);
  FUZZ_CHECK(count(panels, "<title>") == count(panels, "</title>"));
  check_coordinates(panels);
}

// Everything the reader gives, as text: a reading with the plain scanner and one by the library
// alone (reporting/json_plain.h) must give the same.
std::string reading_of(const Timeline& t) {
  std::string out = std::to_string(t.events) + " " + std::to_string(t.cut_short) + " " + std::to_string(t.unclosed);
  for (const TraceSlice& s : t.slices) {
    out += "\n" + std::to_string(s.pid) + " " + std::to_string(s.tid) + " " + s.name + " " + s.cat + " " +
           std::to_string(s.ts_us) + " " + std::to_string(s.dur_us) + " " + std::to_string(s.step);
    for (const auto& a : s.args) out += " " + a.first + "=" + a.second;
  }
  for (const TraceFlow& f : t.flows) {
    out += "\n" + f.name + " " + std::to_string(f.from_pid) + " " + std::to_string(f.to_pid) + " " +
           std::to_string(f.from_ts_us) + " " + std::to_string(f.to_ts_us);
    for (const auto& a : f.args) out += " " + a.first + "=" + a.second;
  }
  for (const auto& p : t.process_names) out += "\n" + std::to_string(p.first) + " " + p.second;
  for (const auto& p : t.thread_names) out += "\n" + std::to_string(p.first.second) + " " + p.second;
  for (double b : t.clock_bound_us) out += " " + std::to_string(b);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string library_error;
  Timeline by_library;
  try {
    by_library = parse_timeline_text(text, "fuzz.json", false);
  } catch (const TimelineError& e) {
    library_error = e.what();
  }
  Timeline t;
  try {
    t = parse_timeline_text(text, "fuzz.json");
  } catch (const TimelineError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m == library_error);
    FUZZ_CHECK(m.rfind("fuzz.json", 0) == 0);
    FUZZ_CHECK(m.find('\n') == std::string::npos);
    return 0;
  }
  FUZZ_CHECK(library_error.empty());
  FUZZ_CHECK(reading_of(t) == reading_of(by_library));
  for (const TraceSlice& s : t.slices) FUZZ_CHECK(s.dur_us >= 0 && s.step >= -1);
  FUZZ_CHECK(2 * t.flows.size() <= t.events);
  size_t total = 0;
  for (const ProcessSummary& p : summarize_timeline(t)) {
    size_t by_name = 0;
    for (const SliceTotal& n : p.by_name) by_name += n.count;
    FUZZ_CHECK(by_name == p.slices);
    total += p.slices;
  }
  FUZZ_CHECK(total == t.slices.size());

  const std::vector<long> steps = recorded_steps(t);
  std::set<long> slice_steps;
  for (const TraceSlice& s : t.slices)
    if (s.step >= 0) slice_steps.insert(s.step);
  FUZZ_CHECK(std::vector<long>(slice_steps.begin(), slice_steps.end()) == steps);
  const long chosen = default_lane_step(t);
  FUZZ_CHECK((chosen == -1) == steps.empty());
  if (steps.empty()) return 0;
  FUZZ_CHECK(slice_steps.count(chosen) == 1);
  for (long step : std::set<long>{chosen, steps.front(), steps.back()}) check_lanes(t, step);
  return 0;
}
