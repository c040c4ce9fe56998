// timeline_lanes: one step's slices per lane as SVG (see reporting/timeline_lanes.h).
#include "reporting/timeline_lanes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "reporting/algorithm_steps.h"
#include "reporting/svg.h"

namespace {

using TrackId = std::pair<long, long>;  // (pid, tid)

constexpr double kWidth = 1140, kMinLeft = 190, kCharWidth = 6.4, kRight = 20, kTop = 24, kRowHeight = 16, kLaneGap = 6,
                 kRankGap = 10, kAxisHeight = 40, kIdleHeight = 18;

struct Kind {
  const char* label;
  const char* color;
};
const Kind kKinds[] = {{"batch read", "#8c8c8c"},
                       {"forward", "#4e79a7"},
                       {"backward", "#f28e2b"},
                       {"optimizer step", "#59a14f"},
                       {"allreduce (gradient averaging, whole call)", "#b07aa1"},
                       {"allreduce algorithm", "#e15759"},
                       {"algorithm step", "#76b7b2"},
                       {"bucket exchange (--overlap on)", "#edc948"},
                       {"other", "#bab0ac"},
                       {"other traffic (start-up broadcast, clock sync, metrics)", "#c9a227"}};

bool has_arg(const TraceSlice& s, const char* key) {
  for (const auto& a : s.args)
    if (a.first == key) return true;
  return false;
}

int kind_of(const TraceSlice& s) {
  if (s.cat == "data") return 0;
  if (s.cat == "forward") return 1;
  if (s.cat == "backward") return 2;
  if (s.cat == "optimizer") return 3;
  if (s.cat == "comm") {
    if (s.name == "allreduce") return 4;
    if (has_arg(s, "algo_step")) return 6;
    if (has_arg(s, "algorithm")) return 5;
    if (has_arg(s, "bucket")) return 7;
    if (s.name != "allreduce") return 9;
    return 4;
  }
  return 8;
}

// First start and last end of the step's slices over every rank.
std::pair<double, double> step_extent(const Timeline& t, long step) {
  double lo = INFINITY, hi = -INFINITY;
  for (const TraceSlice& s : t.slices)
    if (s.step == step) lo = std::min(lo, s.ts_us), hi = std::max(hi, s.ts_us + s.dur_us);
  return {lo, hi};
}

// step_extent of every recorded step, in one pass over the slices.
std::unordered_map<long, std::pair<double, double>> step_extents(const Timeline& t) {
  std::unordered_map<long, std::pair<double, double>> out;
  for (const TraceSlice& s : t.slices) {
    if (s.step < 0) continue;
    auto it = out.emplace(s.step, std::make_pair(s.ts_us, s.ts_us + s.dur_us)).first;
    it->second.first = std::min(it->second.first, s.ts_us);
    it->second.second = std::max(it->second.second, s.ts_us + s.dur_us);
  }
  return out;
}

// The file writes ts and dur in microseconds with 3 decimals: a slice that starts within this of
// another's end follows it (a sibling on the same row), it is not inside it.
constexpr double kTouchUs = 0.0015;

// A slice's depth in its lane: how many of the lane's slices before it still enclose it. A slice
// that ended (within kTouchUs) is closed wherever it sits among the open ones, so a child that
// overhangs its parent does not push the parent's next sibling a row down.
std::vector<int> depths(const std::vector<const TraceSlice*>& lane) {
  std::vector<int> out;
  std::vector<double> open_ends;
  for (const TraceSlice* s : lane) {
    open_ends.erase(
        std::remove_if(open_ends.begin(), open_ends.end(), [&](double end) { return end <= s->ts_us + kTouchUs; }),
        open_ends.end());
    out.push_back(int(open_ends.size()));
    open_ends.push_back(s->ts_us + s->dur_us);
  }
  return out;
}

std::string lane_label(const Timeline& t, const TrackId& id) {
  auto p = t.process_names.find(id.first);
  auto th = t.thread_names.find(id);
  const std::string proc =
      p != t.process_names.end() && !p->second.empty() ? p->second : "pid " + std::to_string(id.first);
  const std::string thread =
      th != t.thread_names.end() && !th->second.empty() ? th->second : "tid " + std::to_string(id.second);
  return proc + " \xc2\xb7 " + thread;
}

// Characters (UTF-8 code points) of a label: its width in the chart's 11px font is about
// kCharWidth each.
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

// An algorithm's call slice ("ring allreduce": call, algorithm, no algo_step): not drawn, it spans
// the same time as the gradient "allreduce" slice around it, whose tooltip gets its args.
bool is_call_slice(const TraceSlice& s) {
  return s.cat == "comm" && has_arg(s, "call") && has_arg(s, "algorithm") && !has_arg(s, "algo_step") &&
         s.name != "allreduce";
}

std::string slice_title(const TraceSlice& s, double t0) {
  std::string title =
      s.name + "\nstart +" + format_number(s.ts_us - t0, 6) + " us, " + format_number(s.dur_us, 5) + " us";
  for (const auto& a : s.args) title += "\n" + a.first + ": " + a.second;
  return title;
}

// "no slice in step 7: rank 0 @ h · comm, rank 1 @ h · comm"
std::string idle_note(const Timeline& t, const std::vector<TrackId>& idle, long step) {
  std::string s = "no slice in step " + std::to_string(step) + ": ";
  for (size_t i = 0; i < idle.size(); ++i) s += (i ? ", " : "") + lane_label(t, idle[i]);
  return s;
}

struct Lane {
  std::vector<const TraceSlice*> slices;  // of the step, by start (longest first on ties)
  std::vector<int> depth;
  int rows = 1;
  double y = 0;  // top pixel
};

// The lanes of the tracks with a slice in step; a track idle in the step gets no lane (it would be
// an empty row) and is named in *idle instead.
// *calls: the step's algorithm call slices, which get no lane row (see is_call_slice).
std::map<TrackId, Lane> build_lanes(const Timeline& t, long step, std::vector<TrackId>* idle,
                                    std::vector<const TraceSlice*>* calls) {
  std::map<TrackId, Lane> lanes;
  std::set<TrackId> tracks;
  for (const TraceSlice& s : t.slices) {
    tracks.insert({s.pid, s.tid});
    if (s.step != step) continue;
    if (is_call_slice(s))
      calls->push_back(&s);
    else
      lanes[{s.pid, s.tid}].slices.push_back(&s);
  }
  for (const auto& kv : t.thread_names) tracks.insert(kv.first);
  for (const TrackId& id : tracks)
    if (!lanes.count(id)) idle->push_back(id);
  for (auto& kv : lanes) {
    Lane& l = kv.second;
    std::stable_sort(l.slices.begin(), l.slices.end(), [](const TraceSlice* a, const TraceSlice* b) {
      return a->ts_us != b->ts_us ? a->ts_us < b->ts_us : a->dur_us > b->dur_us;
    });
    l.depth = depths(l.slices);
    for (int d : l.depth) l.rows = std::max(l.rows, d + 1);
  }
  return lanes;
}

// Lane tops in pid, tid order with a wider gap between ranks; returns the height of all lanes.
double place_lanes(std::map<TrackId, Lane>& lanes, double top) {
  double y = top;
  long last_pid = lanes.empty() ? 0 : lanes.begin()->first.first;
  for (auto& kv : lanes) {
    if (kv.first.first != last_pid) y += kRankGap;
    last_pid = kv.first.first;
    kv.second.y = y;
    y += kv.second.rows * kRowHeight + kLaneGap;
  }
  return y - top;
}

// The pixel row centre of the deepest slice of the lane's step holding time ts; false if none does.
bool row_at(const Lane& l, double ts, double& y) {
  int best = -1;
  for (size_t i = 0; i < l.slices.size(); ++i)
    if (l.slices[i]->ts_us - 1 <= ts && ts <= l.slices[i]->ts_us + l.slices[i]->dur_us + 1)
      best = std::max(best, l.depth[i]);
  if (best < 0) return false;
  y = l.y + (best + 0.5) * kRowHeight;
  return true;
}

// The clock-error bound between two ranks' timestamps (the sum of both ranks' bounds), 0 unknown.
double clock_bound_between(const Timeline& t, long a, long b) {
  auto bound = [&](long r) { return r >= 0 && size_t(r) < t.clock_bound_us.size() ? t.clock_bound_us[r] : 0.0; };
  return bound(a) + bound(b);
}

// The vertical span of the lanes: an arrow that wraps leaves by one edge and re-enters at the other.
struct LaneSpan {
  double top = 0, bottom = 0;
};

// The line of one arrow: straight from (x1, y1) to (x2, y2), or, when going round by the chart's
// top and bottom edges is less than half as far as crossing the lanes in between (the ring's
// W-1 -> 0; not halving-doubling's r <-> r xor W/2, which would be cut for some pairs only), two
// strokes: out of the sender's side to one edge, in from the other edge to the receiver. *label
// is where its chunk label goes; *wrapped says which way was taken.
std::string arrow_path(double x1, double y1, double x2, double y2, const LaneSpan& span, double* lx, double* ly,
                       bool* wrapped) {
  const double direct = std::fabs(y2 - y1);
  const double around = y1 > y2 ? (span.bottom - y1) + (y2 - span.top) : (y1 - span.top) + (span.bottom - y2);
  *wrapped = 2 * around < direct;
  auto n = [](double v) { return format_number(v, 7); };
  if (!*wrapped) {
    *lx = (x1 + x2) / 2 + 3, *ly = (y1 + y2) / 2 - 2;
    return "M " + n(x1) + " " + n(y1) + " L " + n(x2) + " " + n(y2);
  }
  const double xm = (x1 + x2) / 2;
  const double out_y = y1 > y2 ? span.bottom + 4 : span.top - 4, in_y = y1 > y2 ? span.top - 4 : span.bottom + 4;
  *lx = (xm + x2) / 2 + 3, *ly = (in_y + y2) / 2 - 2;
  return "M " + n(x1) + " " + n(y1) + " L " + n(xm) + " " + n(out_y) + " M " + n(xm) + " " + n(in_y) + " L " + n(x2) +
         " " + n(y2);
}

// An arrow per flow whose send and receive both lie inside slices of the step, labelled with its
// chunk ("c2"); an arrow shorter in time than the two ranks' clock-error bound (or running
// backwards, which only the clock error can make) is dashed: its direction in time is not known.
// *any_wrapped: whether an arrow wrapped round (see arrow_path).
std::string flow_arrows(const Timeline& t, const std::map<TrackId, Lane>& lanes, const Frame& f, double lo,
                        const LaneSpan& span, bool* any_wrapped) {
  std::string s;
  for (const TraceFlow& fl : t.flows) {
    auto a = lanes.find({fl.from_pid, fl.from_tid}), b = lanes.find({fl.to_pid, fl.to_tid});
    double y1 = 0, y2 = 0;
    if (a == lanes.end() || b == lanes.end() || !row_at(a->second, fl.from_ts_us, y1) ||
        !row_at(b->second, fl.to_ts_us, y2))
      continue;
    const double bound = clock_bound_between(t, fl.from_pid, fl.to_pid), took = fl.to_ts_us - fl.from_ts_us;
    const bool unsure = bound > 0 && took <= bound;
    const std::string chunk = arg_of(fl.args, "chunk");
    std::string title = fl.name + ": rank " + std::to_string(fl.from_pid) + " -> rank " + std::to_string(fl.to_pid) +
                        ", sent +" + format_number(fl.from_ts_us - lo, 6) + " us, received +" +
                        format_number(fl.to_ts_us - lo, 6) + " us";
    if (unsure)
      title +=
          "; within the clock-error bound (" + format_number(bound, 4) + " us): its direction in time is not known";
    const double x1 = f.px(fl.from_ts_us - lo), x2 = f.px(fl.to_ts_us - lo);
    double lx = 0, ly = 0;
    bool wrapped = false;
    const std::string d = arrow_path(x1, y1, x2, y2, span, &lx, &ly, &wrapped);
    s += "<g class=\"msg\" data-from=\"" + std::to_string(fl.from_pid) + "\" data-to=\"" + std::to_string(fl.to_pid) +
         "\"><title>" + xml_escape(title) + "</title>";
    s += "<path class=\"flow" + std::string(wrapped ? " wrap" : "") + (unsure ? " in-clock-bound" : "") + "\" d=\"" +
         d + "\" fill=\"none\" stroke=\"" + (unsure ? "#d62728" : "#222") + "\" stroke-width=\"1.2\"" +
         (unsure ? " stroke-dasharray=\"3 2\"" : "") + " marker-end=\"url(#lane-arrow)\"/>";
    *any_wrapped |= wrapped;
    if (!chunk.empty()) s += svg_text(lx, ly, "c" + chunk, "start", "class=\"chunk-label\"");
    s += "</g>\n";
  }
  return s;
}

// ---- one band per algorithm step ------------------------------------------------------------------

// One algorithm step of one call, over every rank: its time extent and its messages.
struct StepBand {
  std::string name, phase;  // "ring reduce-scatter 2/3", "reduce-scatter"
  double lo = INFINITY, hi = -INFINITY;
  struct Send {
    long from, to, chunk, parts;
  };
  std::vector<Send> sends;
  std::vector<long> bytes;
  std::string label;  // name and rule (band_rule)
};

// Who sends to whom: "rank r -> r+1", "rank r -> r-1", "rank r <-> r xor 2", or "N messages".
std::string peer_rule(const StepBand& b, long world) {
  auto all = [&](auto pred) { return std::all_of(b.sends.begin(), b.sends.end(), pred); };
  const std::string arrow = " \xe2\x86\x92 ";
  if (all([&](const StepBand::Send& m) { return m.to == (m.from + 1) % world; })) return "rank r" + arrow + "r+1";
  if (all([&](const StepBand::Send& m) { return m.to == (m.from + world - 1) % world; }))
    return "rank r" + arrow + "r-1";
  const long d = b.sends[0].from ^ b.sends[0].to;
  if (all([&](const StepBand::Send& m) { return (m.from ^ m.to) == d; }))
    return "rank r \xe2\x86\x94 r xor " + std::to_string(d);
  return std::to_string(b.sends.size()) + " messages";
}

// Which chunk: "chunk r", "chunk (r-1) mod 4", "chunk (r+1) mod 4" when every message carries one
// of W chunks by that rule; else the share of the vector ("1/2 of the vector").
std::string chunk_rule(const StepBand& b, long world) {
  const bool of_world = std::all_of(b.sends.begin(), b.sends.end(), [&](const auto& m) { return m.parts == world; });
  for (long o = 0; of_world && o < world; ++o)
    if (std::all_of(b.sends.begin(), b.sends.end(),
                    [&](const auto& m) { return m.chunk == ((m.from - o) % world + world) % world; })) {
      const std::string w = std::to_string(world);
      if (o == 0) return "chunk r";
      return o <= world / 2 ? "chunk (r-" + std::to_string(o) + ") mod " + w
                            : "chunk (r+" + std::to_string(world - o) + ") mod " + w;
    }
  const long parts = b.sends[0].parts;
  if (parts > 0 && std::all_of(b.sends.begin(), b.sends.end(), [&](const auto& m) { return m.parts == parts; }))
    return "1/" + std::to_string(parts) + " of the vector";
  return "a piece of the vector";
}

std::string bytes_rule(const StepBand& b) {
  if (b.bytes.empty()) return "";
  const auto mm = std::minmax_element(b.bytes.begin(), b.bytes.end());
  return *mm.first == *mm.second ? std::to_string(*mm.first) + " B each"
                                 : std::to_string(*mm.first) + "-" + std::to_string(*mm.second) + " B";
}

std::string band_rule(const StepBand& b, long world) {
  if (b.sends.empty()) return b.name;
  const std::string bytes = bytes_rule(b);
  return b.name + ": " + peer_rule(b, world) + " sends " + chunk_rule(b, world) + (bytes.empty() ? "" : ", " + bytes);
}

// The step's algorithm steps, by (call, algo_step), in order of their first start.
std::vector<StepBand> step_bands(const Timeline& t, const std::map<TrackId, Lane>& lanes) {
  std::map<std::pair<long, long>, StepBand> by_key;
  long world = 0;
  for (const auto& kv : t.process_names) world = std::max(world, kv.first + 1);
  for (const auto& kv : lanes)
    for (const TraceSlice* sl : kv.second.slices) {
      world = std::max(world, sl->pid + 1);
      if (kind_of(*sl) != 6) continue;
      StepBand& b = by_key[{arg_long(*sl, "call", -1), arg_long(*sl, "algo_step", -1)}];
      b.name = sl->name;
      b.phase = arg_of(sl->args, "phase");
      b.lo = std::min(b.lo, sl->ts_us), b.hi = std::max(b.hi, sl->ts_us + sl->dur_us);
      const long to = arg_long(*sl, "send_to", -1);
      if (to < 0) continue;
      b.sends.push_back({sl->pid, to, arg_long(*sl, "send_chunk", -1), arg_long(*sl, "parts", 0)});
      const long bytes = arg_long(*sl, "bytes_sent", -1);
      if (bytes >= 0) b.bytes.push_back(bytes);
    }
  std::vector<StepBand> out;
  for (auto& kv : by_key) {
    kv.second.label = band_rule(kv.second, world);
    out.push_back(kv.second);
  }
  std::stable_sort(out.begin(), out.end(), [](const StepBand& a, const StepBand& b) { return a.lo < b.lo; });
  return out;
}

constexpr double kBandRow = 14, kBandChar = 6.3;  // a band row; a character of its 10px label

// Rows for the bands: each band's label starts at its first rank's start (moved left to stay in the
// chart); a band goes in the last row opened when that row is free where its bar or label begins,
// else in a new row below (so the ring's steps, each label wider than its step, are a staircase
// read top to bottom in order).
std::vector<int> band_rows(const std::vector<StepBand>& bands, const Frame& f, double lo,
                           std::vector<double>* label_x) {
  std::vector<int> rows;
  std::vector<double> row_end;
  for (const StepBand& b : bands) {
    const double x1 = f.px(b.lo - lo), x2 = f.px(b.hi - lo), w = kBandChar * double(code_points(b.label));
    const double lx = std::max(f.left, std::min(x1, f.width - 4 - w));
    const double begin = std::min(x1, lx), end = std::max(x2, lx + w) + 6;
    size_t r = row_end.empty() ? 0 : row_end.size() - 1;
    if (row_end.empty() || row_end[r] > begin) row_end.push_back(0), r = row_end.size() - 1;
    row_end[r] = end;
    rows.push_back(int(r));
    label_x->push_back(lx);
  }
  return rows;
}

int band_row_count(const std::vector<StepBand>& bands, const Frame& f, double lo) {
  std::vector<double> xs;
  const std::vector<int> rows = band_rows(bands, f, lo, &xs);
  return rows.empty() ? 0 : 1 + *std::max_element(rows.begin(), rows.end());
}

// The bands: a bar in the phase's colour from the step's first start to its last end over every
// rank, its label above it.
std::string bands_svg(const std::vector<StepBand>& bands, const Frame& f, double lo, double top) {
  if (bands.empty()) return "";
  std::vector<double> label_x;
  const std::vector<int> rows = band_rows(bands, f, lo, &label_x);
  std::string s = svg_text(f.left - 6, top + kBandRow - 4, "algorithm steps (all ranks)", "end", "class=\"band-head\"");
  for (size_t i = 0; i < bands.size(); ++i) {
    const StepBand& b = bands[i];
    const double x1 = f.px(b.lo - lo), w = std::max(1.5, f.px(b.hi - lo) - x1), y = top + rows[i] * kBandRow;
    const std::string color = phase_color(b.phase);
    s += "<g class=\"step-band\" data-phase=\"" + xml_escape(b.phase) + "\"><title>" +
         xml_escape(b.label + "\nfirst rank starts +" + format_number(b.lo - lo, 6) + " us, last rank ends +" +
                    format_number(b.hi - lo, 6) + " us") +
         "</title>";
    s += "<rect class=\"band-bar\" x=\"" + format_number(x1, 7) + "\" y=\"" + format_number(y + kBandRow - 5, 7) +
         "\" width=\"" + format_number(w, 7) + "\" height=\"4\" fill=\"" + color + "\"/>";
    s += svg_text(label_x[i], y + kBandRow - 6.5, b.label, "start", "class=\"band-label\" fill=\"" + color + "\"");
    s += "</g>\n";
  }
  return s;
}

// The chunk and peer of an algorithm step slice, drawn inside it when it is wide enough:
// "c2\u2192r1" (sent chunk 2 to rank 1).
std::string step_tag(const TraceSlice& s) {
  const std::string chunk = arg_of(s.args, "send_chunk"), to = arg_of(s.args, "send_to");
  if (chunk.empty() || to.empty() || to == "-1") return "";
  return "c" + chunk + "\xe2\x86\x92r" + to;
}

}  // namespace

long default_lane_step(const Timeline& t) {
  const std::vector<long> steps = recorded_steps(t);
  if (steps.empty()) return -1;
  if (steps.size() == 1) return steps[0];
  const std::unordered_map<long, std::pair<double, double>> extents = step_extents(t);
  std::vector<std::pair<double, long>> by_span;
  for (size_t i = 1; i < steps.size(); ++i) {
    const auto& e = extents.at(steps[i]);
    by_span.push_back({e.second - e.first, steps[i]});
  }
  std::stable_sort(by_span.begin(), by_span.end());
  return by_span[(by_span.size() - 1) / 2].second;
}

namespace {

// The plot frame of one step: lane area height from the lanes, the idle-track note below.
Frame lanes_frame(double lanes_height, bool has_idle, std::pair<double, double> ext, double left) {
  Frame f;
  f.width = kWidth;
  f.left = left;
  f.right = kRight;
  f.top = kTop;
  f.bottom = kAxisHeight + 64 + (has_idle ? kIdleHeight : 0);  // axis labels, the legend, the idle tracks
  f.height = kTop + lanes_height + f.bottom;
  f.x = nice_axis(0, std::max(1.0, ext.second - ext.first), 10);
  f.y = nice_axis(0, 1);
  return f;
}

// Grid lines, tick labels and the axis title under the lanes.
std::string lanes_axis(const Frame& f, double axis_y, long step, double step_begin_us) {
  std::string s;
  for (double tick : f.x.ticks) {
    const std::string x = format_number(f.px(tick), 7);
    s += "<line class=\"grid\" x1=\"" + x + "\" y1=\"" + format_number(kTop, 7) + "\" x2=\"" + x + "\" y2=\"" +
         format_number(axis_y, 7) + "\"/>\n";
    s += svg_text(f.px(tick), axis_y + 14, format_tick(tick, f.x.step), "middle");
  }
  s += svg_text(f.left + f.plot_width() / 2, axis_y + 32,
                "microseconds since step " + std::to_string(step) + " began (" + format_number(step_begin_us, 9) +
                    " us on rank 0's clock)",
                "middle", "class=\"axis-title\"");
  return s;
}

// The args of the algorithm's call slice inside a gradient "allreduce" slice (cost, closed form,
// alpha-beta prediction), for its tooltip; "" when there is none.
std::string call_args(const std::vector<const TraceSlice*>& calls, const TraceSlice& outer) {
  for (const TraceSlice* cp : calls)
    if (const TraceSlice& c = *cp; c.pid == outer.pid && c.tid == outer.tid && c.step == outer.step &&
                                   c.ts_us >= outer.ts_us - kTouchUs &&
                                   c.ts_us + c.dur_us <= outer.ts_us + outer.dur_us + kTouchUs) {
      std::string s = "\n-- " + c.name + " --";
      for (const auto& a : c.args)
        if (a.first != "step") s += "\n" + a.first + ": " + a.second;
      return s;
    }
  return "";
}

// One lane: its label, its background and its slices (the kinds drawn go into *kinds_used).
std::string lane_svg(const Timeline& t, const TrackId& id, const Lane& l, const Frame& f, double step_begin_us,
                     const std::vector<const TraceSlice*>& calls, std::set<int>* kinds_used) {
  std::string s = svg_text(f.left - 6, l.y + kRowHeight * 0.75, lane_label(t, id), "end",
                           "class=\"lane-label\" data-rank=\"" + std::to_string(id.first) + "\"");
  s += "<rect class=\"lane\" x=\"" + format_number(f.left, 7) + "\" y=\"" + format_number(l.y, 7) + "\" width=\"" +
       format_number(f.plot_width(), 7) + "\" height=\"" + format_number(l.rows * kRowHeight, 7) +
       "\" fill=\"#f4f4f4\" data-pid=\"" + std::to_string(id.first) + "\" data-tid=\"" + std::to_string(id.second) +
       "\"/>\n";
  for (size_t i = 0; i < l.slices.size(); ++i) {
    const TraceSlice& sl = *l.slices[i];
    const int k = kind_of(sl);
    kinds_used->insert(k);
    const double x = f.px(sl.ts_us - step_begin_us), w = std::max(0.8, f.px(sl.ts_us + sl.dur_us - step_begin_us) - x);
    const double y = l.y + l.depth[i] * kRowHeight + 1;
    const bool step_slice = k == 6;  // an algorithm step: its phase's colour, its chunk inside
    const std::string title = slice_title(sl, step_begin_us) + (sl.name == "allreduce" ? call_args(calls, sl) : "");
    s += svg_rect(x, y, w, kRowHeight - 2, step_slice ? phase_color(arg_of(sl.args, "phase")) : kKinds[k].color,
                  "class=\"slice\" data-rank=\"" + std::to_string(sl.pid) + "\"" +
                      (step_slice ? " stroke=\"#fff\" stroke-width=\"0.8\"" : ""),
                  title);
    const std::string tag = step_slice ? step_tag(sl) : "";
    if (!tag.empty() && w >= 34) s += svg_text(x + 2, y + kRowHeight - 5, tag, "start", "class=\"slice-tag\"");
  }
  return s;
}

// Every lane, each rank's lanes in one <g class="rank-lanes" data-rank="N">.
std::string all_lanes_svg(const Timeline& t, const std::map<TrackId, Lane>& lanes, const Frame& f, double step_begin_us,
                          const std::vector<const TraceSlice*>& calls, std::set<int>* kinds_used) {
  std::string s;
  bool group_open = false;
  long open_rank = 0;
  for (const auto& kv : lanes) {
    if (!group_open || kv.first.first != open_rank) {
      if (group_open) s += "</g>\n";
      group_open = true;
      open_rank = kv.first.first;
      s += "<g class=\"rank-lanes\" data-rank=\"" + std::to_string(open_rank) + "\">\n";
    }
    s += lane_svg(t, kv.first, kv.second, f, step_begin_us, calls, kinds_used);
  }
  if (group_open) s += "</g>\n";
  return s;
}

}  // namespace

std::string timeline_lanes_svg(const Timeline& t, long step) {
  std::vector<TrackId> idle;
  std::vector<const TraceSlice*> calls;
  std::map<TrackId, Lane> lanes = build_lanes(t, step, &idle, &calls);
  const auto ext = step_extent(t, step);
  double left = kMinLeft;  // wide enough for the longest lane label: labels never clip
  for (const auto& kv : lanes) left = std::max(left, 14 + kCharWidth * double(code_points(lane_label(t, kv.first))));
  // The bands' rows above the lanes (x only depends on the frame's width and axis, not its height).
  const std::vector<StepBand> bands = step_bands(t, lanes);
  const int band_rows_used = band_row_count(bands, lanes_frame(0, false, ext, left), ext.first);
  const double bands_height = band_rows_used ? band_rows_used * kBandRow + 8 : 0;
  const double lanes_height = place_lanes(lanes, kTop + bands_height);
  const Frame f = lanes_frame(bands_height + lanes_height, !idle.empty(), ext, left);
  std::string s =
      "<defs><marker id=\"lane-arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" "
      "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#222\"/></marker></defs>\n";
  const double lanes_top = kTop + bands_height, axis_y = lanes_top + lanes_height;
  s += lanes_axis(f, axis_y, step, ext.first);
  std::set<int> kinds_used;
  s += all_lanes_svg(t, lanes, f, ext.first, calls, &kinds_used);
  s += bands_svg(bands, f, ext.first, kTop);
  bool wrapped = false;
  s += flow_arrows(t, lanes, f, ext.first, LaneSpan{lanes_top, axis_y - kLaneGap}, &wrapped);
  std::vector<LegendEntry> legend;
  std::set<std::string> phases;
  for (const auto& kv : lanes)
    for (const TraceSlice* sl : kv.second.slices)
      if (kind_of(*sl) == 6) phases.insert(arg_of(sl->args, "phase"));
  for (int k : kinds_used)
    if (k != 6) legend.push_back({kKinds[k].label, kKinds[k].color, ""});
  for (const std::string& p : phases)
    legend.push_back({p.empty() ? "algorithm step" : "algorithm step: " + p, phase_color(p), ""});
  // the arrows' entries carry data-legend="arrows": the page hides them with the arrows (collapse)
  const std::string arrows = "data-legend=\"arrows\"";
  if (!t.flows.empty())
    legend.push_back({"message: send \xe2\x86\x92 receive, labelled with its chunk", "#222", arrows});
  if (wrapped)
    legend.push_back(
        {"an arrow cut at the lanes' edge wraps round (last rank \xe2\x86\x94 first): out at one edge, "
         "in again at the other",
         "#222", arrows});
  if (!t.clock_bound_us.empty())
    legend.push_back({"dashed red: a message shorter than the clock-error bound", "#d62728", arrows});
  double used = 0;
  s += svg_legend(f.left, axis_y + 42, f.plot_width(), legend, used);
  // the height once the legend's rows are known: every row of it and the idle note inside the chart
  const double idle_y = axis_y + 42 + used + kIdleHeight - 4;
  if (!idle.empty()) s += svg_text(f.left, idle_y, idle_note(t, idle, step), "start", "class=\"lanes-idle\"");
  const double height = std::max(f.height, (idle.empty() ? axis_y + 42 + used : idle_y) + 10);
  return svg_begin("timeline-lanes", f.width, height,
                   "step " + std::to_string(step) + ": slices per rank and thread track over time") +
         s + svg_end();
}
