// html_report: the report page, section by section (see reporting/html_report.h).
#include "reporting/html_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reporting/algorithm_steps.h"
#include "reporting/svg.h"
#include "reporting/time_split_report.h"
#include "reporting/timeline_lanes.h"

namespace {

const char* const kStyle = R"CSS(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 4px 0; }
h2 { font-size: 17px; margin: 26px 0 6px 0; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
p.source, p.caption { color: #555; font-size: 13px; margin: 4px 0; }
p.no-data { color: #8a5a00; font-style: italic; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
th { background: #f0f0f0; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.mismatch td { background: #fde2e2; }
details summary { cursor: pointer; color: #333; font-size: 13px; margin: 4px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 8px 0; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card .value { font-size: 20px; font-weight: 600; }
.card .name { font-size: 12px; color: #666; }
code.flag { background: #eef; border-radius: 3px; padding: 1px 5px; margin: 2px; display: inline-block; font-size: 12px; }
.warning { color: #a00; }
svg.chart { background: #fff; border: 1px solid #ddd; display: block; margin: 6px 0; font-size: 11px; }
svg .grid { stroke: #eee; }
svg .frame { fill: none; stroke: #999; }
svg .tick-mark { stroke: #999; }
svg .axis-title { font-size: 12px; fill: #444; }
svg .panel-title { font-size: 12px; font-weight: 600; }
svg polyline { stroke-width: 1.8; }
svg .avg-mark { stroke: #000; stroke-width: 2; }
svg .legend-item { cursor: default; }
svg .dim { opacity: 0.15; }
svg .chunk-label { font-size: 10px; font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg .slice-tag { font-size: 9px; fill: #fff; pointer-events: none; }
svg .panel-note, svg .lanes-idle, svg .clock-note { font-size: 11px; fill: #555; }
svg .node-label { font-size: 11px; font-weight: 600; }
svg .msg.hidden { display: none; }
svg .algo-node { cursor: pointer; }
label.rank-filter, label.collapse-arrows { font-size: 13px; margin-right: 14px; }
svg .band-label { font-size: 10px; font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg .band-head { font-size: 10px; fill: #555; }
svg .msg.collapsed, svg.collapsed [data-legend="arrows"] { display: none; }
)CSS";

// Dims every series but the rank under the pointer in a legend; marks the page as loaded.
const char* const kScript = R"JS(
(function () {
  var ranked = document.querySelectorAll('[data-rank]');
  function focus(rank) {
    for (var i = 0; i < ranked.length; i++) {
      var e = ranked[i];
      if (e.classList.contains('legend-item')) continue;
      e.classList.toggle('dim', rank !== null && e.getAttribute('data-rank') !== rank);
    }
  }
  var items = document.querySelectorAll('.legend-item[data-rank]');
  for (var i = 0; i < items.length; i++) {
    items[i].addEventListener('mouseenter', function () { focus(this.getAttribute('data-rank')); });
    items[i].addEventListener('mouseleave', function () { focus(null); });
  }
  // "messages of rank N": only the arrows that rank sends or receives, in the lanes and the panels
  var msgs = document.querySelectorAll('.msg');
  function only(rank) {
    for (var i = 0; i < msgs.length; i++) {
      var m = msgs[i];
      var keep = rank === '' || m.getAttribute('data-from') === rank || m.getAttribute('data-to') === rank;
      m.classList.toggle('hidden', !keep);
    }
  }
  var pick = document.getElementById('rank-filter');
  if (pick) pick.addEventListener('change', function () { only(this.value); });
  var nodes = document.querySelectorAll('.algo-node');
  for (var i = 0; i < nodes.length; i++)
    nodes[i].addEventListener('click', function () {
      var r = this.getAttribute('data-node');
      if (pick) pick.value = pick.value === r ? '' : r;
      only(pick ? pick.value : r);
    });
  // "collapse arrows": the lane chart's W arrows per algorithm step give way to the step's band;
  // the page opened with #collapse starts collapsed
  var lanes = document.getElementById('timeline-lanes');
  var collapse = document.getElementById('collapse-arrows');
  function collapseArrows(on) {
    if (!lanes) return;
    lanes.classList.toggle('collapsed', on);
    var arrows = lanes.querySelectorAll('.msg');
    for (var i = 0; i < arrows.length; i++) arrows[i].classList.toggle('collapsed', on);
  }
  if (collapse) {
    collapse.addEventListener('change', function () { collapseArrows(this.checked); });
    if (/collapse/.test(window.location.hash)) collapse.checked = true;
    collapseArrows(collapse.checked);
  }
  document.body.setAttribute('data-report-ready', '1');
})();
)JS";

std::string esc(const std::string& s) { return xml_escape(s); }
std::string num(double v, int sig = 4) { return format_number(v, sig); }
std::string ms(double seconds) { return format_number(seconds * 1e3, 3) + " ms"; }
std::string rank_attr(int r) { return "data-rank=\"" + std::to_string(r) + "\""; }

std::string no_data(const std::string& chart_id, const std::string& sentence) {
  return "<p class=\"no-data\" data-for=\"" + esc(chart_id) + "\">" + esc(sentence) + "</p>\n";
}

// "0-3, 5, 7-8" for a sorted list of ranks.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

// Integer ticks for small integer ranges (epochs), round ticks otherwise.
Axis integer_axis(double lo, double hi) {
  if (hi - lo > 10) return nice_axis(lo, hi);
  Axis a;
  a.lo = std::floor(lo) - (hi == lo ? 1 : 0);
  a.hi = std::ceil(hi) + (hi == lo ? 1 : 0);
  a.step = 1;
  for (double t = a.lo; t <= a.hi; t += 1) a.ticks.push_back(t);
  return a;
}

// An axis spanning exactly [lo - pad, hi + pad] (bars and end points off the frame), with the
// round ticks of [lo, hi] that fall inside it; integer ticks when integers is set and the range is small.
Axis padded_axis(double lo, double hi, double pad, bool integers) {
  Axis a = integers ? integer_axis(lo, hi) : nice_axis(lo, hi, 8);
  if (hi == lo && pad == 0) pad = 1;
  std::vector<double> inside;
  for (double t : a.ticks)
    if (t >= lo - pad && t <= hi + pad) inside.push_back(t);
  a.ticks = inside;
  a.lo = lo - pad, a.hi = hi + pad;
  return a;
}

// Round ticks over [lo, hi] widened by 5% of the range, so no point sits on the frame.
Axis value_axis(double lo, double hi, int max_ticks) {
  const double pad = (hi - lo) * 0.05;
  return nice_axis(lo - pad, hi + pad, max_ticks);
}

std::vector<LegendEntry> rank_legend(const std::map<int, Points>& by_rank, const ReportHeader& h) {
  std::vector<LegendEntry> out;
  for (const auto& kv : by_rank) {
    const int r = kv.first;
    const std::string host = r < int(h.hosts.size()) ? " @ " + h.hosts[size_t(r)] : "";
    out.push_back({"rank " + std::to_string(r) + host, series_color(r), rank_attr(r)});
  }
  return out;
}

// ---- header and summary --------------------------------------------------------------------

std::string hosts_line(const ReportHeader& h) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks;
  for (size_t r = 0; r < h.hosts.size(); ++r) {
    if (!ranks.count(h.hosts[r])) order.push_back(h.hosts[r]);
    ranks[h.hosts[r]].push_back(int(r));
  }
  std::string s;
  for (const std::string& host : order)
    s += (s.empty() ? "" : "; ") + host + ": rank" + (ranks[host].size() > 1 ? "s " : " ") + rank_ranges(ranks[host]);
  return s;
}

std::string row(const std::string& name, const std::string& value_html) {
  return "<tr><th>" + esc(name) + "</th><td>" + value_html + "</td></tr>\n";
}

std::string header_section(const ReportInput& in) {
  const ReportHeader& h = in.metrics.header;
  std::string s = "<section id=\"run-header\">\n<h1>baresgd run report</h1>\n";
  s += "<p class=\"source\">metrics: " + esc(in.metrics_name) +
       (in.has_timeline ? " &middot; timeline: " + esc(in.timeline_name) : "") + "</p>\n<table>\n";
  s += row("world size", std::to_string(h.world_size));
  s += row("backend", esc(h.backend));
  s += row("algorithm", esc(h.algorithm));
  s += row("hosts", esc(hosts_line(h)));
  std::string versions;
  for (const auto& v : h.versions) versions += (versions.empty() ? "" : ", ") + esc(v.first) + " " + esc(v.second);
  if (!versions.empty()) s += row("versions", versions);
  std::string flags;
  for (const auto& f : h.flags) flags += "<code class=\"flag\">" + esc(f.first) + "=" + esc(f.second) + "</code> ";
  if (!flags.empty()) s += row("flags", flags);
  s += "</table>\n";
  for (const std::string& w : in.metrics.warnings) s += "<p class=\"warning\">" + esc(w) + "</p>\n";
  return s + "</section>\n";
}

std::string card(const std::string& name, const std::string& value) {
  return "<div class=\"card\"><div class=\"value\">" + esc(value) + "</div><div class=\"name\">" + esc(name) +
         "</div></div>\n";
}

std::string summary_section(const Metrics& m) {
  std::string s = "<section id=\"run-summary\">\n<h2>Summary</h2>\n";
  if (!m.has_summary) return s + no_data("run-summary", "no summary record (the run did not finish)") + "</section>\n";
  const SummaryRecord& r = m.summary;
  s += "<div class=\"cards\">\n";
  // A run with no test pass writes test_accuracy null: the card says "n/a", with no unit.
  s += card("test accuracy", std::isfinite(r.test_accuracy) ? num(r.test_accuracy * 100, 4) + " %" : "n/a");
  s += card("training time", num(r.train_s, 4) + " s");
  s += card("samples/s", num(r.samples_per_s, 6));
  s += card("time in communication", std::isfinite(r.comm_share) ? num(r.comm_share * 100, 3) + " %" : "n/a");
  s += card("epochs", std::to_string(r.epochs));
  s += card("ranks / backend / algorithm", std::to_string(r.world_size) + " / " + r.backend + " / " + r.algorithm);
  return s + "</div>\n</section>\n";
}

// ---- charts ----------------------------------------------------------------------------------

// Legend at the top of a chart: its SVG, and the frame's top margin moved below it.
std::string top_legend(Frame& f, const std::vector<LegendEntry>& entries) {
  double used = 0;
  const std::string s = svg_legend(f.left, 10, f.plot_width(), entries, used);
  f.top = 16 + used;
  f.height += used;
  return s;
}

std::string loss_chart(const Metrics& m) {
  std::string s = "<section>\n<h2>Training loss per rank</h2>\n";
  if (m.steps.empty()) return s + no_data("loss-chart", "no step records") + "</section>\n";
  std::map<int, Points> by_rank;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const ReportStep& r : m.steps) {
    by_rank[r.rank].push_back({double(r.step), r.loss});
    x0 = std::min(x0, double(r.step)), x1 = std::max(x1, double(r.step));
    y0 = std::min(y0, r.loss), y1 = std::max(y1, r.loss);
  }
  Frame f;
  f.width = 900;
  f.x = nice_axis(x0, x1, 8);
  f.y = nice_axis(y0, y1, 6);
  const std::string legend = top_legend(f, rank_legend(by_rank, m.header));
  std::string body = svg_axes(f, "step", "loss");
  for (auto& kv : by_rank) {
    std::sort(kv.second.begin(), kv.second.end());
    const std::string color = series_color(kv.first);
    body += svg_polyline(f, kv.second, color, "class=\"rank-line\" " + rank_attr(kv.first),
                         "rank " + std::to_string(kv.first) + " loss");
    if (kv.second.size() <= 60) {
      std::vector<std::string> titles;
      for (const auto& p : kv.second)
        titles.push_back("rank " + std::to_string(kv.first) + ", step " + num(p.first, 9) + ": loss " + num(p.second));
      body += svg_markers(f, kv.second, color, rank_attr(kv.first), titles);
    }
  }
  s += svg_begin("loss-chart", f.width, f.height, "training loss per rank over steps") + legend + body + svg_end();
  s += "<p class=\"caption\">" + std::to_string(m.steps.size()) + " step records from " +
       std::to_string(by_rank.size()) + " ranks; each rank's loss is on its own shard of the batch.</p>\n";
  return s + "</section>\n";
}

std::string accuracy_chart(const Metrics& m) {
  std::string s = "<section>\n<h2>Test accuracy per epoch</h2>\n";
  if (m.tests.empty()) return s + no_data("accuracy-chart", "no test records") + "</section>\n";
  std::vector<TestRecord> tests = m.tests;
  std::sort(tests.begin(), tests.end(), [](const TestRecord& a, const TestRecord& b) { return a.epoch < b.epoch; });
  Points pts;
  std::vector<std::string> titles;
  double y0 = 100, y1 = 0;
  for (const TestRecord& t : tests) {
    pts.push_back({double(t.epoch), t.accuracy * 100});
    titles.push_back("epoch " + std::to_string(t.epoch) + ": accuracy " + num(t.accuracy * 100) + " %, test loss " +
                     num(t.loss));
    y0 = std::min(y0, t.accuracy * 100), y1 = std::max(y1, t.accuracy * 100);
  }
  Frame f;
  f.x = padded_axis(pts.front().first, pts.back().first, 0.25, true);
  f.y = value_axis(y0, y1, 5);
  f.y.lo = std::max(f.y.lo, 0.0), f.y.hi = std::min(f.y.hi, 100.0);
  f.y.ticks.erase(std::remove_if(f.y.ticks.begin(), f.y.ticks.end(), [](double t) { return t < 0 || t > 100; }),
                  f.y.ticks.end());
  s += svg_begin("accuracy-chart", f.width, f.height, "test accuracy per epoch");
  s += svg_axes(f, "epoch", "test accuracy (%)");
  s += svg_polyline(f, pts, series_color(0), "class=\"accuracy-line\"", "test accuracy");
  s += svg_markers(f, pts, series_color(0), "", titles);
  s += svg_end();
  s += "<p class=\"caption\">Averaged over ranks, as the Test line prints. Last: " + num(tests.back().accuracy * 100) +
       " % after epoch " + std::to_string(tests.back().epoch) + ".</p>\n";
  return s + "</section>\n";
}

// What each rank sent at the first --inspect step (the per-layer records summed): the bars are
// the buffer summed, N; the wire carries more (2(W-1)/W x N for the ring). "" without records.
std::string sent_note(const Metrics& m) {
  if (m.inspects.empty()) return "";
  const int step = m.inspects.front().step;
  std::map<int, std::pair<double, double>> by_rank;  // rank -> (sent, received)
  for (const InspectRecord& r : m.inspects)
    if (r.step == step) by_rank[r.rank].first += r.bytes_sent, by_rank[r.rank].second += r.bytes_received;
  std::string s = " The bars are the buffer each allreduce sums, not what crosses the wire: at step " +
                  std::to_string(step) + " (--inspect) each rank sent and received ";
  bool first = true;
  for (const auto& kv : by_rank) {
    s += std::string(first ? "" : ", ") + "rank " + std::to_string(kv.first) + " " + num(kv.second.first, 9) + " / " +
         num(kv.second.second, 9);
    first = false;
  }
  return s + " bytes (the header of the --inspect table says how they were counted).";
}

std::string bytes_chart(const Metrics& m) {
  std::string s = "<section>\n<h2>Allreduce bytes per logged step</h2>\n";
  if (m.steps.empty()) return s + no_data("bytes-chart", "no step records") + "</section>\n";
  std::map<int, std::pair<double, int>> by_step;  // step -> (sum of bytes, ranks)
  double lo = 1e300, hi = -1e300;
  for (const ReportStep& r : m.steps) {
    by_step[r.step].first += r.allreduce_bytes;
    ++by_step[r.step].second;
    lo = std::min(lo, r.allreduce_bytes), hi = std::max(hi, r.allreduce_bytes);
  }
  Frame f;
  f.width = 900;
  double top = 0;
  for (const auto& kv : by_step) top = std::max(top, kv.second.first / kv.second.second / 1e3);
  const double first = by_step.begin()->first, last = by_step.rbegin()->first;
  const double gap = by_step.size() > 1 ? (last - first) / double(by_step.size() - 1) : 1;
  f.x = padded_axis(first, last, gap / 2, false);
  f.y = nice_axis(0, top, 5, true);
  const double bar = std::max(1.0, std::min(24.0, (f.px(first + gap) - f.px(first)) * 0.7));
  std::string body = svg_axes(f, "step", "kB per allreduce (1 kB = 1000 bytes)");
  for (const auto& kv : by_step) {
    const double kb = kv.second.first / kv.second.second / 1e3;
    body += svg_rect(f.px(kv.first) - bar / 2, f.py(kb), bar, f.py(0) - f.py(kb), series_color(0),
                     "class=\"bar bytes-bar\"",
                     "step " + std::to_string(kv.first) + ": " + num(kb * 1e3, 9) + " bytes (mean of " +
                         std::to_string(kv.second.second) + " ranks)");
  }
  s += svg_begin("bytes-chart", f.width, f.height, "allreduce bytes per logged step") + body + svg_end();
  s += "<p class=\"caption\">Mean over ranks of each rank's gradient allreduce bytes; " +
       (lo == hi ? "every rank reported " + num(hi, 9) + " bytes at every logged step."
                 : "ranks and steps differ: " + num(lo, 9) + " to " + num(hi, 9) + " bytes.") +
       esc(sent_note(m)) + "</p>\n";
  return s + "</section>\n";
}

// ---- per-layer view (--inspect) ----------------------------------------------------------------

struct InspectView {
  std::vector<int> steps;
  std::vector<std::string> layers;  // in order of first appearance
  std::set<int> ranks;
};

InspectView inspect_view(const Metrics& m) {
  InspectView v;
  std::set<int> steps;
  std::set<std::string> seen;
  for (const InspectRecord& r : m.inspects) {
    steps.insert(r.step);
    v.ranks.insert(r.rank);
    if (seen.insert(r.layer).second) v.layers.push_back(r.layer);
  }
  v.steps.assign(steps.begin(), steps.end());
  return v;
}

constexpr size_t kMaxPanels = 8;
constexpr double kPanelHeight = 200;

// One panel (an inspected step) of the layer-norm chart at vertical offset y0.
std::string layer_panel(const Metrics& m, const InspectView& v, int step, double y0, double width) {
  std::map<std::pair<std::string, int>, const InspectRecord*> at;
  double top = 0;
  for (const InspectRecord& r : m.inspects)
    if (r.step == step) {
      at[{r.layer, r.rank}] = &r;
      top = std::max(top, std::max(r.local_grad_norm, r.average_grad_norm));
    }
  Frame f;
  f.width = width;
  f.top = y0 + 24;
  f.height = y0 + kPanelHeight;
  f.bottom = 34;
  f.x.lo = 0, f.x.hi = double(v.layers.size());
  f.y = nice_axis(0, top, 4, true);
  std::string s = svg_text(f.left, y0 + 16, "step " + std::to_string(step), "start", "class=\"panel-title\"");
  s += svg_axes(f, "", "gradient L2 norm", false);
  const double slot = f.plot_width() / double(v.layers.size());
  const double bar = std::max(1.0, std::min(18.0, slot * 0.8 / double(v.ranks.size())));
  for (size_t l = 0; l < v.layers.size(); ++l) {
    const double group_x = f.left + slot * (double(l) + 0.5) - bar * double(v.ranks.size()) / 2;
    int k = 0;
    double avg = -1;
    for (int r : v.ranks) {
      auto it = at.find({v.layers[l], r});
      if (it != at.end()) {
        const InspectRecord& rec = *it->second;
        s += svg_rect(group_x + bar * k, f.py(rec.local_grad_norm), bar, f.py(0) - f.py(rec.local_grad_norm),
                      series_color(r), "class=\"bar layer-bar\" " + rank_attr(r),
                      v.layers[l] + ", rank " + std::to_string(r) + ": local norm " + num(rec.local_grad_norm) +
                          ", cosine to average " + num(rec.cosine_to_average));
        avg = rec.average_grad_norm;
      }
      ++k;
    }
    if (avg >= 0) {
      const double y = f.py(avg);
      s += "<line class=\"avg-mark\" x1=\"" + format_number(group_x - 3, 7) + "\" x2=\"" +
           format_number(group_x + bar * k + 3, 7) + "\" y1=\"" + format_number(y, 7) + "\" y2=\"" +
           format_number(y, 7) + "\"><title>" + esc(v.layers[l] + ": norm of the averaged gradient " + num(avg)) +
           "</title></line>\n";
    }
    s += svg_text(f.left + slot * (double(l) + 0.5), f.top + f.plot_height() + 16, v.layers[l], "middle",
                  "class=\"tick x-tick\"");
  }
  return s;
}

// Whether every rank's parameter checksum agrees with the first one's, per (step, layer).
std::string checksum_sentence(const Metrics& m) {
  std::map<std::pair<int, std::string>, std::string> first_sum;
  std::set<std::pair<int, std::string>> differ;
  for (const InspectRecord& r : m.inspects) {
    auto it = first_sum.emplace(std::make_pair(r.step, r.layer), r.param_checksum).first;
    if (it->second != r.param_checksum) differ.insert({r.step, r.layer});
  }
  if (differ.empty())
    return "<p class=\"caption\" id=\"checksums\">Parameter checksums: identical on every rank for all " +
           std::to_string(first_sum.size()) + " inspected (step, layer) pairs.</p>\n";
  std::string list;
  size_t k = 0;
  for (const auto& d : differ) {
    if (++k > 10) break;
    list += (list.empty() ? "" : ", ") + ("step " + std::to_string(d.first) + " " + d.second);
  }
  return "<p class=\"warning\" id=\"checksums\">Parameter checksums differ between ranks at " +
         std::to_string(differ.size()) + " (step, layer) pairs: " + esc(list) + (differ.size() > 10 ? ", ..." : "") +
         "</p>\n";
}

std::string inspect_table(const Metrics& m) {
  std::map<std::pair<int, std::string>, std::string> first_sum;
  for (const InspectRecord& r : m.inspects) first_sum.emplace(std::make_pair(r.step, r.layer), r.param_checksum);
  std::string s = checksum_sentence(m) + "<details>\n<summary>every inspect record (" +
                  std::to_string(m.inspects.size()) + ")</summary>\n";
  s += "<table id=\"inspect-table\">\n<tr><th>step</th><th>layer</th><th>rank</th><th>local grad norm</th>"
       "<th>cosine to average</th><th>averaged grad norm</th><th>update / parameter norm</th>"
       "<th>bytes sent</th><th>bytes received</th><th>parameter checksum</th></tr>\n";
  size_t rows = 0;
  for (const InspectRecord& r : m.inspects) {
    if (++rows > 2000) break;
    const bool differs = first_sum[{r.step, r.layer}] != r.param_checksum;
    s += std::string("<tr") + (differs ? " class=\"mismatch\"" : "") + "><td>" + std::to_string(r.step) + "</td><td>" +
         esc(r.layer) + "</td><td>" + std::to_string(r.rank) + "</td><td class=\"num\">" + num(r.local_grad_norm) +
         "</td><td class=\"num\">" + num(r.cosine_to_average) + "</td><td class=\"num\">" + num(r.average_grad_norm) +
         "</td><td class=\"num\">" + num(r.update_ratio) + "</td><td class=\"num\">" + num(r.bytes_sent, 12) +
         "</td><td class=\"num\">" + num(r.bytes_received, 12) + "</td><td><code>" + esc(r.param_checksum) +
         (differs ? " (differs)" : "") + "</code></td></tr>\n";
  }
  s += "</table>\n";
  if (m.inspects.size() > 2000)
    s += "<p class=\"caption\">First 2000 of " + std::to_string(m.inspects.size()) + " inspect records shown.</p>\n";
  return s + "</details>\n";
}

std::string layer_norm_chart(const Metrics& m) {
  std::string s = "<section>\n<h2>Per-layer gradient norms at the inspected steps</h2>\n";
  if (m.inspects.empty())
    return s + no_data("layer-norm-chart", "no inspect records (run with --inspect STEPS)") + "</section>\n";
  const InspectView v = inspect_view(m);
  const size_t panels = std::min(v.steps.size(), kMaxPanels);
  const double slot = std::max(110.0, 16.0 * double(v.ranks.size()));
  const double width = std::max(600.0, std::min(1100.0, 90.0 + double(v.layers.size()) * slot));
  std::vector<LegendEntry> legend;
  for (int r : v.ranks) legend.push_back({"rank " + std::to_string(r), series_color(r), rank_attr(r)});
  legend.push_back({"norm of the averaged gradient", "#000", ""});
  double used = 0;
  const std::string legend_svg = svg_legend(70, 10, width - 90, legend, used);
  std::string body;
  for (size_t p = 0; p < panels; ++p)
    body += layer_panel(m, v, v.steps[p], 14 + used + kPanelHeight * double(p), width);
  s += svg_begin("layer-norm-chart", width, 20 + used + kPanelHeight * double(panels),
                 "per-layer gradient norms per inspected step") +
       legend_svg + body + svg_end();
  if (v.steps.size() > panels)
    s += "<p class=\"caption\">First " + std::to_string(panels) + " of " + std::to_string(v.steps.size()) +
         " inspected steps drawn; all are in the table.</p>\n";
  s += "<p class=\"caption\">Bars: each rank's local gradient norm; black line: the norm of the averaged gradient. "
       "A checksum that differs from the first rank's for the same layer and step is marked.</p>\n";
  return s + inspect_table(m) + "</section>\n";
}

std::string adasum_section(const Metrics& m) {
  if (m.adasums.empty()) return "";
  std::string s =
      "<section>\n<h2>Adasum combination coefficients</h2>\n<table id=\"adasum-table\">\n"
      "<tr><th>step</th><th>rank</th><th>level</th><th>layer</th><th>a</th><th>b</th></tr>\n";
  size_t rows = 0;
  for (const AdasumRecord& a : m.adasums) {
    if (++rows > 1000) break;
    s += "<tr><td>" + std::to_string(a.step) + "</td><td>" + std::to_string(a.rank) + "</td><td>" +
         std::to_string(a.level) + "</td><td>" + esc(a.layer) + "</td><td class=\"num\">" + num(a.a_coef) +
         "</td><td class=\"num\">" + num(a.b_coef) + "</td></tr>\n";
  }
  s += "</table>\n";
  if (m.adasums.size() > 1000)
    s += "<p class=\"caption\">First 1000 of " + std::to_string(m.adasums.size()) + " adasum records shown.</p>\n";
  return s + "</section>\n";
}

// ---- timeline ------------------------------------------------------------------------------------

// The lane chart's controls when it draws our algorithms' messages: a choice of one rank whose
// messages alone are drawn (W > 2: the arrows cross every lane), and "collapse arrows", one band
// per algorithm step instead of its W arrows.
std::string lane_controls(const Timeline& t) {
  if (t.flows.empty()) return "";
  std::string s = "<p>";
  if (t.process_names.size() >= 3) {
    s += "<label class=\"rank-filter\">Messages of: <select id=\"rank-filter\"><option value=\"\">every rank</option>";
    for (const auto& kv : t.process_names)
      s += "<option value=\"" + std::to_string(kv.first) + "\">rank " + std::to_string(kv.first) + "</option>";
    s += "</select></label> (or click a rank in the panels) ";
  }
  return s +
         "<label class=\"collapse-arrows\"><input type=\"checkbox\" id=\"collapse-arrows\"> collapse the lane chart's "
         "arrows: one labelled band per algorithm step</label></p>\n";
}

// The small multiples of the step's allreduce call, when our algorithms ran it.
std::string algorithm_steps_part(const Timeline& t, long step) {
  const std::string svg = algorithm_steps_svg(t, step);
  if (svg.empty()) return "";
  return "<p class=\"caption\">The allreduce of step " + std::to_string(step) +
         ", one panel per algorithm step: each arrow is one message, labelled with the chunk it carries "
         "(hover it for the float range and bytes); beside each rank, a strip of the vector's pieces shaded by how "
         "many ranks' values its copy sums after the step. Outlined pieces were just received.</p>\n" +
         svg;
}

// The clock-sync's error bound per rank: timestamps of different ranks compare only within it.
std::string clock_note(const Timeline& t) {
  if (t.clock_bound_us.size() < 2) return "";
  std::string s =
      "<p class=\"caption\" id=\"clock-bound\">Clock-error bound (ping-pong at start-up, per rank "
      "against rank 0): ";
  for (size_t r = 1; r < t.clock_bound_us.size(); ++r)
    s += (r > 1 ? ", " : "") + std::string("rank ") + std::to_string(r) + " \u00b1" + num(t.clock_bound_us[r], 3) +
         " us";
  return s +
         ". A message that took less than its two ranks' bounds is drawn dashed red: which end came first is "
         "not known.</p>\n";
}

std::string lanes_part(const ReportInput& in) {
  const long step = in.lane_step >= 0 ? in.lane_step : default_lane_step(in.timeline);
  std::string s = "<h3 id=\"timeline-step\">One optimizer step across ranks</h3>\n";
  if (step < 0) return s + no_data("timeline-lanes", "the timeline's slices carry no step");
  s += "<p class=\"caption\">Step " + std::to_string(step) +
       (in.lane_step >= 0 ? " (--step)"
                          : " (the median-duration recorded step after the first; --step N picks another)") +
       ": one lane per rank and thread track, every slice of the step on rank 0's clock; arrows are our allreduce "
       "algorithm's messages from sender to receiver. Hover a slice for its args.</p>\n";
  return s + lane_controls(in.timeline) + algorithm_steps_part(in.timeline, step) + clock_note(in.timeline) +
         timeline_lanes_svg(in.timeline, step);
}

std::string timeline_section(const ReportInput& in) {
  std::string s = "<section id=\"timeline\">\n<h2>Timeline: time per slice name, per rank</h2>\n";
  if (!in.has_timeline) return s + no_data("timeline-summary", "no timeline file given") + "</section>\n";
  const std::vector<ProcessSummary> procs = summarize_timeline(in.timeline);
  if (procs.empty()) return s + no_data("timeline-summary", "the timeline holds no slices") + "</section>\n";
  s += "<table id=\"timeline-summary\">\n<tr><th>process</th><th>slices</th><th>span</th><th>top slices (total time, "
       "count)</th></tr>\n";
  for (const ProcessSummary& p : procs) {
    std::string top;
    for (size_t k = 0; k < p.by_name.size() && k < 6; ++k)
      top += (top.empty() ? "" : "; ") + esc(p.by_name[k].name.empty() ? "(unnamed)" : p.by_name[k].name) + " " +
             ms(p.by_name[k].total_us / 1e6) + " (" + std::to_string(p.by_name[k].count) + ")";
    s += "<tr><td>" + esc(p.label) + "</td><td class=\"num\">" + std::to_string(p.slices) + "</td><td class=\"num\">" +
         ms(p.span_us / 1e6) + "</td><td>" + top + "</td></tr>\n";
  }
  s += "</table>\n<p class=\"caption\">" + std::to_string(in.timeline.events) + " trace events.";
  if (in.timeline.cut_short) s += " The file ends inside its event array (a killed run); read up to its end.";
  if (in.timeline.unclosed) s += " " + std::to_string(in.timeline.unclosed) + " slices never ended and are left out.";
  s += " Open the file in Perfetto or chrome://tracing for the full picture.</p>\n";
  return s + lanes_part(in) + "</section>\n";
}

}  // namespace

std::string build_report_html(const ReportInput& in) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>baresgd report: " +
                  esc(in.metrics_name) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  s += header_section(in);
  if (in.timeline_only)
    return s + timeline_section(in) + std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  s += summary_section(in.metrics);
  s += loss_chart(in.metrics);
  s += accuracy_chart(in.metrics);
  s += step_split_section(in.metrics);
  s += arrival_section(in.metrics);
  s += bytes_chart(in.metrics);
  s += layer_norm_chart(in.metrics);
  s += adasum_section(in.metrics);
  s += timeline_section(in);
  s += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return s;
}
