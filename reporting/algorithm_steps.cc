// algorithm_steps: one call of our allreduce as small multiples (see reporting/algorithm_steps.h).
#include "reporting/algorithm_steps.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "reporting/svg.h"

namespace {

constexpr double kWidth = 1140, kTitleH = 34, kBoxH = 32, kStripW = 40, kStripH = 11, kLegendH = 64;

// One message of one algorithm step: who sent which piece of the vector to whom.
struct Message {
  int from = 0, to = 0, chunk = -1, parts = 0;
  size_t lo = 0, hi = 0;
  std::string bytes;
};

struct AlgoStep {
  int index = 0;
  std::string label, phase;  // "reduce-scatter 1/3", "reduce-scatter"
  std::vector<Message> messages;
};

struct AlgoCall {
  std::string algorithm;
  int world = 0;
  size_t elements = 0;
  std::vector<AlgoStep> steps;
};

// The panels' grid: 4 to a row up to 4 ranks, 3 (wider, taller) from 5 on, so 8 ranks' strips fit.
int columns(int world) { return world > 4 ? 3 : 4; }
double panel_w(int world) { return (kWidth - 20) / columns(world); }
double panel_h(int world) { return world > 4 ? 300 : 262; }
double strip_w(size_t pieces) { return std::min(64.0, std::max(kStripW, 8.0 * double(pieces))); }

bool has_arg(const TraceSlice& s, const char* key) {
  for (const auto& a : s.args)
    if (a.first == key) return true;
  return false;
}

// The step slices of the first call of our algorithms in `step`, as messages per algorithm step.
AlgoCall call_of(const Timeline& t, long step) {
  long first = LONG_MAX;
  for (const TraceSlice& s : t.slices)
    if (s.step == step && has_arg(s, "algo_step") && has_arg(s, "send_to"))
      first = std::min(first, arg_long(s, "call", -1));
  AlgoCall c;
  if (first == LONG_MAX) return c;
  std::map<long, AlgoStep> by_step;
  for (const TraceSlice& s : t.slices) {
    if (s.step != step || !has_arg(s, "send_to") || arg_long(s, "call", -1) != first) continue;
    c.algorithm = arg_of(s.args, "algorithm");
    c.world = std::max(c.world, int(s.pid) + 1);
    AlgoStep& st = by_step[arg_long(s, "algo_step", 0)];
    st.index = int(arg_long(s, "algo_step", 0));
    st.phase = arg_of(s.args, "phase");
    st.label = s.name.rfind(c.algorithm + " ", 0) == 0 ? s.name.substr(c.algorithm.size() + 1) : s.name;
    c.elements = std::max(c.elements, size_t(std::max(0L, arg_long(s, "recv_hi", 0))));
    const long to = arg_long(s, "send_to", -1);
    if (to < 0) continue;
    Message m;
    m.from = int(s.pid);
    m.to = int(to);
    m.chunk = int(arg_long(s, "send_chunk", -1));
    m.parts = int(arg_long(s, "parts", 0));
    m.lo = size_t(std::max(0L, arg_long(s, "send_lo", 0)));
    m.hi = size_t(std::max(0L, arg_long(s, "send_hi", 0)));
    m.bytes = arg_of(s.args, "bytes_sent");
    c.elements = std::max(c.elements, m.hi);
    c.world = std::max(c.world, m.to + 1);
    st.messages.push_back(m);
  }
  for (const auto& kv : t.process_names) c.world = std::max(c.world, int(kv.first) + 1);
  for (auto& kv : by_step) c.steps.push_back(kv.second);
  return c;
}

// ---- partial sums ----------------------------------------------------------------------------

// held[r][k]: the ranks whose values rank r's copy of piece k sums (bit q: rank q's), piece k
// being [cuts[k], cuts[k+1]) of the vector; cut wherever any message's range begins or ends.
using Held = std::vector<std::vector<uint64_t>>;

std::vector<size_t> cuts_of(const AlgoCall& c) {
  std::vector<size_t> cuts = {0, c.elements};
  for (const AlgoStep& st : c.steps)
    for (const Message& m : st.messages) cuts.push_back(m.lo), cuts.push_back(m.hi);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

bool reduces(const std::string& phase) { return phase == "reduce-scatter" || phase == "fold"; }

// The partial sums after each step (index 0: the start, every rank its own values).
std::vector<Held> partial_sums(const AlgoCall& c, const std::vector<size_t>& cuts) {
  const size_t pieces = cuts.size() - 1;
  Held held(size_t(c.world), std::vector<uint64_t>(pieces));
  for (int r = 0; r < c.world; ++r) std::fill(held[r].begin(), held[r].end(), uint64_t(1) << r);
  std::vector<Held> out = {held};
  for (const AlgoStep& st : c.steps) {
    Held next = held;
    for (const Message& m : st.messages)
      for (size_t k = 0; k < pieces; ++k)
        if (cuts[k] >= m.lo && cuts[k + 1] <= m.hi)
          next[m.to][k] = reduces(st.phase) ? held[m.to][k] | held[m.from][k] : held[m.from][k];
    held = next;
    out.push_back(held);
  }
  return out;
}

int count_bits(uint64_t v) {
  int n = 0;
  for (; v; v &= v - 1) ++n;
  return n;
}

std::string ranks_in(uint64_t v) {
  std::string s;
  for (int q = 0; q < 64; ++q)
    if (v >> q & 1) s += (s.empty() ? "" : "+") + std::to_string(q);
  return s;
}

// ---- layout ----------------------------------------------------------------------------------

struct Pt {
  double x, y;
};

// A rank is a box: "rank r" on top, the strip of its pieces below; box_w wide, kBoxH high.
double box_w(size_t pieces) { return strip_w(pieces) + 8; }

// Node (box) centres in a panel's drawing area (origin at its top left, panel_w x panel_h -
// kTitleH): the ring as an ellipse as wide as the boxes leave room for; the hypercube's
// dimension j drawn along axis j.
std::vector<Pt> node_positions(const AlgoCall& c, size_t pieces) {
  const double cx = panel_w(c.world) / 2, cy = (panel_h(c.world) - kTitleH - 18) / 2;
  const double rx = cx - box_w(pieces) / 2 - 10, ry = cy - kBoxH / 2 - 6;
  const int w = c.world;
  int p = 1, dims = 0;
  while (p * 2 <= w) p *= 2, ++dims;
  std::vector<Pt> pts(static_cast<size_t>(w));
  if ((c.algorithm == "halving-doubling" || c.algorithm == "adasum") && dims >= 1 && dims <= 3) {
    // a hypercube: dimension j is the level-j pairing r <-> r ^ 2^j
    const Pt axis[3] = {{dims == 3 ? 2 * rx - 90 : 2 * rx, 0}, {0, dims == 3 ? 2 * ry - 62 : 2 * ry}, {90, -62}};
    double lo_x = 1e9, hi_x = -1e9, lo_y = 1e9, hi_y = -1e9;
    for (int r = 0; r < w; ++r) {
      const int b = r < p ? r : r - p;
      Pt q{0, 0};
      for (int j = 0; j < dims; ++j)
        if (b >> j & 1) q.x += axis[j].x, q.y += axis[j].y;
      if (r >= p) q.y += kBoxH + 14;  // a folding rank sits just below its partner r - P
      pts[r] = q;
      lo_x = std::min(lo_x, q.x), hi_x = std::max(hi_x, q.x), lo_y = std::min(lo_y, q.y), hi_y = std::max(hi_y, q.y);
    }
    for (Pt& q : pts) q.x += cx - (lo_x + hi_x) / 2, q.y += cy - (lo_y + hi_y) / 2;
    return pts;
  }
  for (int r = 0; r < w; ++r) {  // a ring, rank 0 at the top, clockwise
    const double a = -M_PI / 2 + 2 * M_PI * r / w;
    pts[r] = {cx + rx * std::cos(a), cy + ry * std::sin(a)};
  }
  return pts;
}

std::string n(double v) { return format_number(v, 6); }

// Rank r's box after the step: its name, and the strip of its pieces shaded by how many ranks'
// values each sums (outlined in the phase's colour: just received).
std::string node_svg(const AlgoCall& c, const std::vector<size_t>& cuts, const std::vector<uint64_t>& held, int r,
                     Pt node, const std::vector<bool>& just_received, const std::string& phase) {
  const double bw_all = box_w(held.size()), x0 = node.x - bw_all / 2, y0 = node.y - kBoxH / 2;
  std::string s = "<g class=\"algo-node\" data-node=\"" + std::to_string(r) + "\"><rect x=\"" + n(x0) + "\" y=\"" +
                  n(y0) + "\" width=\"" + n(bw_all) + "\" height=\"" + n(kBoxH) +
                  "\" rx=\"4\" fill=\"#fff\" stroke=\"#333\"/>" +
                  svg_text(node.x, y0 + 12, "rank " + std::to_string(r), "middle", "class=\"node-label\"") + "\n";
  const double sx = x0 + 4, sy = y0 + kBoxH - kStripH - 4, bw = strip_w(held.size()) / double(held.size());
  for (size_t k = 0; k < held.size(); ++k) {
    const int have = count_bits(held[k]);
    const bool full = have == c.world;
    const double opacity = full ? 1.0 : 0.12 + 0.6 * (have - 1) / std::max(1, c.world - 1);
    const std::string title = "rank " + std::to_string(r) + ", elements [" + std::to_string(cuts[k]) + ", " +
                              std::to_string(cuts[k + 1]) +
                              "): " + (full ? "the full sum" : "the sum of ranks " + ranks_in(held[k])) + " (" +
                              std::to_string(have) + " of " + std::to_string(c.world) + ")";
    s += "<rect x=\"" + n(sx + k * bw) + "\" y=\"" + n(sy) + "\" width=\"" + n(bw) + "\" height=\"" + n(kStripH) +
         "\" fill=\"" + (full ? "#1b3a5c" : "#2b6ca3") + "\" fill-opacity=\"" + n(opacity) + "\" stroke=\"" +
         (just_received[k] ? phase_color(phase) : "#fff") + "\" stroke-width=\"" + (just_received[k] ? "2" : "0.5") +
         "\"><title>" + xml_escape(title) + "</title></rect>\n";
  }
  return s + "</g>\n";
}

// Where the line from a box's centre in direction (ux, uy) leaves the box (plus a margin).
Pt box_exit(Pt centre, double ux, double uy, double half_w, double margin) {
  const double tx = std::fabs(ux) > 1e-9 ? half_w / std::fabs(ux) : 1e9;
  const double ty = std::fabs(uy) > 1e-9 ? (kBoxH / 2) / std::fabs(uy) : 1e9;
  const double t = std::min(tx, ty) + margin;
  return {centre.x + ux * t, centre.y + uy * t};
}

// One arrow from sender to receiver, bent to its right so the two ways of a pair stay apart,
// labelled with its chunk.
std::string arrow_svg(const Message& m, Pt a, Pt b, double half_w, const std::string& phase,
                      const std::string& step_label) {
  double ux = b.x - a.x, uy = b.y - a.y;
  const double len = std::max(1e-6, std::hypot(ux, uy));
  ux /= len, uy /= len;
  const Pt s = box_exit(a, ux, uy, half_w, 2), e = box_exit(b, -ux, -uy, half_w, 3);
  const double bend = std::min(14.0, std::hypot(e.x - s.x, e.y - s.y) * 0.2);
  const Pt ctl{(s.x + e.x) / 2 - uy * bend, (s.y + e.y) / 2 + ux * bend};
  const Pt mid{0.25 * s.x + 0.5 * ctl.x + 0.25 * e.x, 0.25 * s.y + 0.5 * ctl.y + 0.25 * e.y};
  const std::string color = phase_color(phase);
  const std::string title = step_label + ": rank " + std::to_string(m.from) + " -> rank " + std::to_string(m.to) +
                            ", chunk " + std::to_string(m.chunk) + " of " + std::to_string(m.parts) + ", elements [" +
                            std::to_string(m.lo) + ", " + std::to_string(m.hi) + "), " + m.bytes + " B";
  return "<g class=\"msg\" data-from=\"" + std::to_string(m.from) + "\" data-to=\"" + std::to_string(m.to) +
         "\"><title>" + xml_escape(title) + "</title><path d=\"M " + n(s.x) + " " + n(s.y) + " Q " + n(ctl.x) + " " +
         n(ctl.y) + " " + n(e.x) + " " + n(e.y) + "\" fill=\"none\" stroke=\"" + color +
         "\" stroke-width=\"1.8\" marker-end=\"url(#algo-arrow-" + phase + ")\"/>" +
         svg_text(mid.x, mid.y + 3.5, "c" + std::to_string(m.chunk), "middle", "class=\"chunk-label\"") + "</g>\n";
}

// Panel k: 0 the start, else algorithm step k-1; its frame, title, arrows, nodes and strips.
std::string panel_svg(const AlgoCall& c, const std::vector<size_t>& cuts, const std::vector<Held>& sums, size_t k,
                      const std::vector<Pt>& pts) {
  const double pw = panel_w(c.world), ph = panel_h(c.world);
  const double x0 = 10 + double(k % size_t(columns(c.world))) * pw, y0 = double(k / size_t(columns(c.world))) * ph;
  const AlgoStep* st = k == 0 ? nullptr : &c.steps[k - 1];
  const std::string phase = st ? st->phase : "";
  std::string s = "<g class=\"algo-panel\" transform=\"translate(" + n(x0) + " " + n(y0) + ")\">\n";
  s += "<rect x=\"2\" y=\"2\" width=\"" + n(pw - 6) + "\" height=\"" + n(ph - 6) +
       "\" fill=\"#fff\" stroke=\"#ddd\"/>\n";
  if (st) s += "<rect x=\"2\" y=\"2\" width=\"" + n(pw - 6) + "\" height=\"5\" fill=\"" + phase_color(phase) + "\"/>\n";
  const std::string title = st ? std::to_string(k) + ". " + st->label : "start: each rank its own gradient";
  s += svg_text(12, 22, title, "start", "class=\"panel-title\"");
  if (st && !st->messages.empty())
    s += svg_text(pw - 12, ph - 12, "each chunk: 1/" + std::to_string(st->messages[0].parts) + " of the vector", "end",
                  "class=\"panel-note\"");
  s += "<g transform=\"translate(0 " + n(kTitleH) + ")\">\n";
  const double half_w = box_w(cuts.size() - 1) / 2;
  if (st)
    for (const Message& m : st->messages) s += arrow_svg(m, pts[m.from], pts[m.to], half_w, phase, st->label);
  for (int r = 0; r < c.world; ++r) {
    std::vector<bool> got(cuts.size() - 1, false);
    if (st)
      for (const Message& m : st->messages)
        for (size_t q = 0; q + 1 < cuts.size(); ++q)
          if (m.to == r && cuts[q] >= m.lo && cuts[q + 1] <= m.hi) got[q] = true;
    s += node_svg(c, cuts, sums[k][r], r, pts[r], got, phase);
  }
  return s + "</g>\n</g>\n";
}

std::string arrow_markers() {
  std::string s = "<defs>";
  for (const char* phase : {"reduce-scatter", "allgather", "fold", "unfold", "exchange"})
    s += "<marker id=\"algo-arrow-" + std::string(phase) +
         "\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
         "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"" +
         phase_color(phase) + "\"/></marker>";
  return s + "</defs>\n";
}

}  // namespace

const char* phase_color(const std::string& phase) {
  if (phase == "reduce-scatter") return "#0f8b8d";
  if (phase == "allgather") return "#a0522d";
  if (phase == "fold") return "#8e44ad";
  if (phase == "unfold") return "#c0392b";
  return "#76b7b2";  // exchange, or a phase this report does not know
}

std::string algorithm_steps_svg(const Timeline& t, long step) {
  const AlgoCall c = call_of(t, step);
  if (c.steps.empty() || c.world < 2 || c.world > 64 || c.elements == 0) return "";
  const std::vector<size_t> cuts = cuts_of(c);
  const std::vector<Held> sums = partial_sums(c, cuts);
  const std::vector<Pt> pts = node_positions(c, cuts.size() - 1);
  const size_t cols = size_t(columns(c.world)), panels = c.steps.size() + 1, rows = (panels + cols - 1) / cols;
  const double height = double(rows) * panel_h(c.world) + kLegendH;
  std::string s =
      svg_begin("algorithm-steps", kWidth, height,
                c.algorithm + " allreduce of step " + std::to_string(step) + ", one panel per algorithm step");
  s += arrow_markers();
  for (size_t k = 0; k < panels; ++k) s += panel_svg(c, cuts, sums, k, pts);
  std::vector<LegendEntry> legend;
  std::vector<std::string> seen;
  for (const AlgoStep& st : c.steps)
    if (std::find(seen.begin(), seen.end(), st.phase) == seen.end()) {
      seen.push_back(st.phase);
      legend.push_back({st.phase + ": message, labelled with its chunk", phase_color(st.phase), ""});
    }
  legend.push_back(
      {"strip: the vector's pieces on that rank, shade = how many ranks' values are summed", "#2b6ca3", ""});
  legend.push_back({"the full sum of all " + std::to_string(c.world) + " ranks", "#1b3a5c", ""});
  double used = 0;
  s += svg_legend(10, double(rows) * panel_h(c.world) + 8, kWidth - 20, legend, used);
  return s + svg_end();
}
