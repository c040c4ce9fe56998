// timeline_reader: trace events -> slices and per-process totals (see reporting/timeline_reader.h).
#include "reporting/timeline_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "reporting/byte_source.h"
#include "reporting/file_io.h"
#include "reporting/json.h"

namespace {

constexpr size_t kMaxFileBytes = size_t(1) << 30;

double number_or(const JsonValue& e, const char* key, double fallback) {
  const JsonValue* v = e.find(key);
  return v && v->is_number() ? v->number : fallback;
}

// A pid or tid; one outside +-1e15 (no process has it, and a cast would overflow) reads as 0.
long id_or_zero(const JsonValue& e, const char* key) {
  const double d = number_or(e, key, 0);
  return d >= -1e15 && d <= 1e15 ? long(d) : 0;
}

std::string string_or(const JsonValue& e, const char* key) {
  const JsonValue* v = e.find(key);
  return v && v->is_string() ? v->text : std::string();
}

// The one-letter phase ("X", "B", ...) of an event, or 0 (absent, not a string, or longer).
char phase_of(const JsonValue& e) {
  const JsonValue* v = e.find("ph");
  return v && v->is_string() && v->text.size() == 1 ? v->text[0] : 0;
}

// args as (key, text) pairs: strings decoded, numbers as written, anything else as JSON text.
TraceArgs args_of(const JsonValue& e) {
  TraceArgs out;
  const JsonValue* args = e.find("args");
  if (!args || !args->is_object()) return out;
  // Strings and numbers are appended from the parsed value as they are (no copy); the packed
  // string is sized once, exactly.
  std::vector<std::string> other;  // the JSON text of args that are neither (rare)
  size_t bytes = 0;
  for (const auto& m : args->members) {
    if (!m.second.is_string() && !m.second.is_number()) other.push_back(json_to_text(m.second));
    bytes +=
        TraceArgs::pair_bytes(m.first, m.second.is_string() || m.second.is_number() ? m.second.text : other.back());
  }
  out.reserve(bytes);
  size_t k = 0;
  for (const auto& m : args->members)
    out.append(m.first, m.second.is_string() || m.second.is_number() ? m.second.text : other[k++]);
  return out;
}

// The clock_sync metadata's clock_error_bound_us list, one bound per rank.
std::vector<double> clock_bounds_of(const JsonValue& e) {
  std::vector<double> out;
  const JsonValue* args = e.find("args");
  const JsonValue* bounds = args ? args->find("clock_error_bound_us") : nullptr;
  if (!bounds || !bounds->is_array()) return out;
  for (const JsonValue& b : bounds->items) out.push_back(b.is_number() ? b.number : 0);
  return out;
}

// Collects events into a Timeline, pairing "B"/"E" per (pid, tid).
class Collector {
 public:
  explicit Collector(Timeline& t) : t_(t) {}

  void add(const JsonValue& e) {
    ++t_.events;
    const char ph = phase_of(e);
    TraceSlice s;
    s.pid = id_or_zero(e, "pid");
    s.tid = id_or_zero(e, "tid");
    s.name = string_or(e, "name");
    s.cat = string_or(e, "cat");
    s.ts_us = number_or(e, "ts", 0);
    if (ph == 'X' || ph == 'B') {
      s.args = args_of(e);
      const JsonValue* args = e.find("args");
      const double step = args && args->is_object() ? number_or(*args, "step", -1) : -1;
      s.step = step >= 0 && step <= 1e15 ? long(step) : -1;
    }
    if (ph == 'X') {
      s.dur_us = std::max(0.0, number_or(e, "dur", 0));
      t_.slices.push_back(std::move(s));
    } else if (ph == 'B') {
      open_[{s.pid, s.tid}].push_back(std::move(s));
    } else if (ph == 'E') {
      auto& stack = open_[{s.pid, s.tid}];
      if (stack.empty()) return;  // an end whose begin was before --timeline-steps: ignored
      TraceSlice b = std::move(stack.back());
      stack.pop_back();
      b.dur_us = std::max(0.0, s.ts_us - b.ts_us);
      t_.slices.push_back(std::move(b));
    } else if (ph == 's' || ph == 'f') {
      if (ph == 's') s.args = args_of(e);
      add_flow_end(e, std::move(s), ph == 's');
    } else if (ph == 'M' && s.name == "process_name") {
      const JsonValue* args = e.find("args");
      if (args) t_.process_names[s.pid] = string_or(*args, "name");
    } else if (ph == 'M' && s.name == "clock_sync") {
      t_.clock_bound_us = clock_bounds_of(e);
    } else if (ph == 'M' && s.name == "thread_name") {
      const JsonValue* args = e.find("args");
      if (args) t_.thread_names[{s.pid, s.tid}] = string_or(*args, "name");
    }
  }

  void finish() {
    for (const auto& kv : open_) t_.unclosed += kv.second.size();
  }

 private:
  // Flow ends pair by id (a number or a string) whichever comes first in the file.
  // An end waiting for its other end keeps only what the flow needs (its name is in the key).
  void add_flow_end(const JsonValue& e, TraceSlice&& s, bool is_start) {
    const JsonValue* idv = e.find("id");
    if (!idv || !(idv->is_number() || idv->is_string())) return;
    std::string id;
    id.reserve(s.name.size() + 1 + idv->text.size());
    id.append(s.name).append(1, '\n').append(idv->text);
    auto& mine = is_start ? starts_ : finishes_;
    auto& other = is_start ? finishes_ : starts_;
    auto it = other.find(id);
    if (it == other.end()) {
      mine[std::move(id)] = FlowEnd{s.pid, s.tid, s.ts_us, std::move(s.args)};
      return;
    }
    FlowEnd here{s.pid, s.tid, s.ts_us, std::move(s.args)};
    FlowEnd& from = is_start ? here : it->second;
    const FlowEnd& to = is_start ? it->second : here;
    t_.flows.push_back(
        {std::move(s.name), from.pid, from.tid, to.pid, to.tid, from.ts_us, to.ts_us, std::move(from.args)});
    other.erase(it);
  }
  struct FlowEnd {
    long pid = 0, tid = 0;
    double ts_us = 0;
    TraceArgs args;
  };

  Timeline& t_;
  std::map<std::pair<long, long>, std::vector<TraceSlice>> open_;
  std::unordered_map<std::string, FlowEnd> starts_, finishes_;  // flow ends still waiting for their other end
};

[[noreturn]] void fail(const std::string& filename, const JsonError& e) {
  throw TimelineError(filename + ": not a trace file: " + e.what());
}

// "HEAD line L, column C: reason" for byte `at` of the file (head: "FILE:" or "FILE: not a trace file:").
[[noreturn]] void fail_at(const ByteSource& src, size_t at, const std::string& head, const std::string& reason) {
  const auto lc = src.line_column(at);
  throw TimelineError(head + " line " + std::to_string(lc.first) + ", column " + std::to_string(lc.second) + ": " +
                      reason);
}

// The events, streamed out of the file one at a time: the array form "[ e, e, ..." (read as a
// killed run leaves it too: no ']' after any event or comma, or a last event cut short), or the
// object form {"traceEvents": [ e, ... ], ...}.
void read_events(ByteSource& src, bool array_form, const std::string& filename, Collector& c, Timeline& t,
                 bool scan_plain) {
  JsonLimits limits;
  limits.max_depth = 32;
  limits.scan_plain = scan_plain;
  JsonItems items;
  try {
    items =
        read_json_items(src, array_form ? "" : "traceEvents", limits, array_form, [&](const JsonValue& e, size_t at) {
          if (!e.is_object()) fail_at(src, at, filename + ":", "a trace event that is not a JSON object");
          c.add(e);
        });
  } catch (const JsonError& e) {
    fail(filename, e);
  }
  if (!items.found) throw TimelineError(filename + ": not a trace file: the object has no \"traceEvents\" array");
  t.cut_short = items.cut_short;
}

Timeline parse_timeline(ByteSource& src, const std::string& filename, bool scan_plain) {
  Timeline t;
  Collector c(t);
  src.skip_space();
  const int first = src.at_end() ? -1 : src.peek();
  if (first == '[' || first == '{')
    read_events(src, first == '[', filename, c, t, scan_plain);
  else
    throw TimelineError(filename + ": not a trace file (expected a JSON array or an object with \"traceEvents\")");
  c.finish();
  return t;
}

}  // namespace

Timeline parse_timeline_text(const std::string& text, const std::string& filename, bool scan_plain) {
  ByteSource src(text);
  return parse_timeline(src, filename, scan_plain);
}

Timeline read_timeline_file(const std::string& path) {
  InputFile f;
  std::string error;
  if (!f.open(path, kMaxFileBytes, error)) throw TimelineError(error);
  ByteSource src(f.fd(), f.size(), path);
  return parse_timeline(src, path, true);
}

std::vector<long> recorded_steps(const Timeline& t) {
  std::vector<long> steps;
  for (const TraceSlice& s : t.slices)  // a step's slices mostly come together: keep each run once
    if (s.step >= 0 && (steps.empty() || steps.back() != s.step)) steps.push_back(s.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

std::vector<ProcessSummary> summarize_timeline(const Timeline& t) {
  std::map<long, ProcessSummary> by_pid;
  std::map<long, std::map<std::string, SliceTotal>> names;
  std::map<long, std::pair<double, double>> extent;
  for (const TraceSlice& s : t.slices) {
    ProcessSummary& p = by_pid[s.pid];
    p.pid = s.pid;
    ++p.slices;
    SliceTotal& n = names[s.pid][s.name];
    n.name = s.name;
    ++n.count;
    n.total_us += s.dur_us;
    auto it = extent.find(s.pid);
    if (it == extent.end())
      extent[s.pid] = {s.ts_us, s.ts_us + s.dur_us};
    else
      it->second = {std::min(it->second.first, s.ts_us), std::max(it->second.second, s.ts_us + s.dur_us)};
  }
  std::vector<ProcessSummary> out;
  for (auto& kv : by_pid) {
    ProcessSummary p = kv.second;
    auto pn = t.process_names.find(kv.first);
    p.label = pn != t.process_names.end() && !pn->second.empty() ? pn->second : "pid " + std::to_string(kv.first);
    p.span_us = extent[kv.first].second - extent[kv.first].first;
    for (auto& n : names[kv.first]) p.by_name.push_back(n.second);
    std::stable_sort(p.by_name.begin(), p.by_name.end(),
                     [](const SliceTotal& a, const SliceTotal& b) { return a.total_us > b.total_us; });
    out.push_back(std::move(p));
  }
  return out;
}

std::string arg_of(const std::vector<std::pair<std::string, std::string>>& args, const std::string& key) {
  for (const auto& a : args)
    if (a.first == key) return a.second;
  return "";
}

std::string arg_of(const TraceArgs& args, const std::string& key) {
  for (const auto& a : args)
    if (a.first == key) return a.second;
  return "";
}

long arg_long(const TraceSlice& s, const char* key, long fallback) {
  const std::string v = arg_of(s.args, key);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  return end && *end == '\0' ? x : fallback;
}
