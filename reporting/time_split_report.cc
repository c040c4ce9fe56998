// time_split_report: the step split and the arrival-order strip (see time_split_report.h).
#include "reporting/time_split_report.h"

#include <algorithm>
#include <map>

#include "reporting/svg.h"

namespace {

std::string ms(double seconds) { return format_number(seconds * 1e3, 3) + " ms"; }
std::string p(const std::string& cls, const std::string& text) {
  return "<p class=\"" + cls + "\">" + xml_escape(text) + "</p>\n";
}
std::string no_data(const std::string& id, const std::string& sentence) {
  return "<p class=\"no-data\" data-for=\"" + id + "\">" + xml_escape(sentence) + "</p>\n";
}

constexpr int kParts = 5;
const char* const kPartNames[kParts] = {"data", "compute", "transfer (moving bytes)", "wait (for the slowest rank)",
                                        "descheduled (waiting for a CPU)"};
const char* const kPartClasses[kParts] = {"part-data", "part-compute", "part-comm", "part-wait", "part-descheduled"};
const char* const kPartColors[kParts] = {"#9ecae1", "#3182bd", "#fd8d3c", "#d62728", "#7f7f7f"};

struct SplitMeans {
  double part[kParts] = {0, 0, 0, 0, 0};
  double step = 0, on_cpu = 0, run_delay = 0;
  int count = 0;
};

std::map<int, SplitMeans> split_means(const Metrics& m) {
  std::map<int, SplitMeans> out;
  for (const ReportStep& r : m.steps) {
    SplitMeans& t = out[r.rank];
    const double parts[kParts] = {r.data_s, r.compute_s, r.transfer_s, r.wait_s, r.descheduled_s};
    for (int k = 0; k < kParts; ++k) t.part[k] += std::max(0.0, parts[k]);
    t.step += r.step_s;
    t.on_cpu += r.on_cpu_s;
    t.run_delay += r.run_delay_s;
    ++t.count;
  }
  for (auto& kv : out) {
    for (double& v : kv.second.part) v /= kv.second.count;
    kv.second.step /= kv.second.count;
    kv.second.on_cpu /= kv.second.count;
    kv.second.run_delay /= kv.second.count;
  }
  return out;
}

std::string split_chart(const std::map<int, SplitMeans>& means) {
  double top = 0;
  for (const auto& kv : means) {
    double sum = 0;
    for (double v : kv.second.part) sum += v;
    top = std::max(top, sum * 1e3);
  }
  Frame f;
  f.width = std::max(600.0, std::min(1100.0, 120.0 + 70.0 * double(means.size())));
  f.x.lo = 0, f.x.hi = double(means.size());
  f.y = nice_axis(0, top, 6, true);
  std::vector<LegendEntry> legend;
  for (int k = 0; k < kParts; ++k) legend.push_back({kPartNames[k], kPartColors[k], ""});
  double used = 0;
  const std::string legend_svg = svg_legend(f.left, 10, f.plot_width(), legend, used);
  f.top = 16 + used;
  f.height += used;
  std::string body = svg_axes(f, "rank", "mean time per logged step (ms)", false);
  const double slot = f.plot_width() / double(means.size()), bar = std::min(48.0, slot * 0.7);
  int i = 0;
  for (const auto& kv : means) {
    const double x = f.left + slot * (i + 0.5) - bar / 2;
    double acc = 0;
    for (int k = 0; k < kParts; ++k) {
      const double v = kv.second.part[k] * 1e3;
      body +=
          svg_rect(x, f.py(acc + v), bar, f.py(acc) - f.py(acc + v), kPartColors[k],
                   "class=\"bar " + std::string(kPartClasses[k]) + "\" data-rank=\"" + std::to_string(kv.first) + "\"",
                   "rank " + std::to_string(kv.first) + " " + kPartNames[k] + ": " + format_number(v, 3) + " ms");
      acc += v;
    }
    if (means.size() <= 32 || i % int((means.size() + 31) / 32) == 0)
      body += svg_text(f.left + slot * (i + 0.5), f.top + f.plot_height() + 16, std::to_string(kv.first), "middle",
                       "class=\"tick x-tick\"");
    ++i;
  }
  return svg_begin("step-time-chart", f.width, f.height, "per-rank step time breakdown") + legend_svg + body +
         svg_end();
}

std::string split_table(const std::map<int, SplitMeans>& means, bool oversubscribed) {
  const std::string mark = oversubscribed ? "<span class=\"oversubscribed-mark\" title=\"includes waiting for a "
                                            "CPU: ranks outnumbered the host's CPUs\">*</span>"
                                          : "";
  std::string s =
      "<table id=\"step-split\">\n<tr><th>rank</th><th>logged steps</th><th>data</th><th>compute</th><th>transfer "
      "(moving bytes)</th><th>wait (slowest rank)</th><th>descheduled (no CPU)</th><th>step</th><th>exchange on "
      "CPU</th><th>exchange run_delay</th></tr>\n";
  for (const auto& kv : means) {
    const SplitMeans& t = kv.second;
    s += "<tr><td>" + std::to_string(kv.first) + "</td><td class=\"num\">" + std::to_string(t.count) + "</td>";
    for (int k = 0; k < kParts; ++k)
      s += "<td class=\"num\">" + ms(t.part[k]) + (k < 2 || k == 2 ? mark : "") + "</td>";
    s += "<td class=\"num\">" + ms(t.step) + mark + "</td><td class=\"num\">" + ms(t.on_cpu) +
         "</td><td class=\"num\">" + ms(t.run_delay) + "</td></tr>\n";
  }
  return s + "</table>\n";
}

std::string what_if_line(const ReportHeader& h) {
  std::string s;
  if (h.straggler_rank >= 0) s += "--straggler slowed rank " + std::to_string(h.straggler_rank) + "'s compute. ";
  if (h.link_delay_ms > 0 || h.link_bytes_per_s > 0)
    s += "Our algorithms' messages went over an emulated link (--link-delay " + format_number(h.link_delay_ms) +
         " ms, --link-bandwidth " +
         (h.link_bytes_per_s > 0 ? format_number(h.link_bytes_per_s / 1e6) + " MB/s" : "unlimited") +
         "): transfer includes the emulated hold. ";
  return s.empty() ? "" : p("caption what-if", "What-if: " + s);
}

}  // namespace

ArrivalTally tally_arrivals(const Metrics& m) {
  ArrivalTally t;
  const int w = std::max(1, m.header.world_size);
  t.last_count.assign(size_t(w), 0);
  t.mean_arrive_s.assign(size_t(w), 0);
  std::vector<int> seen(size_t(w), 0);
  std::map<int, std::pair<int, double>> last_of_step;  // step -> (rank, arrive_s) of its latest
  for (const ReportStep& r : m.steps) {
    if (!r.has_arrival || r.rank < 0 || r.rank >= w) continue;
    t.mean_arrive_s[size_t(r.rank)] += r.arrive_s;
    ++seen[size_t(r.rank)];
    auto it = last_of_step.find(r.step);
    if (it == last_of_step.end() || r.arrive_s > it->second.second) last_of_step[r.step] = {r.rank, r.arrive_s};
  }
  for (int r = 0; r < w; ++r)
    if (seen[size_t(r)] > 0) t.mean_arrive_s[size_t(r)] /= seen[size_t(r)];
  t.steps = int(last_of_step.size());
  for (const auto& kv : last_of_step) ++t.last_count[size_t(kv.second.first)];
  if (t.steps > 0)
    t.most_often_last = int(std::max_element(t.last_count.begin(), t.last_count.end()) - t.last_count.begin());
  return t;
}

std::string step_split_section(const Metrics& m) {
  std::string s = "<section>\n<h2>Where a step's time goes, per rank</h2>\n";
  if (m.steps.empty()) return s + no_data("step-time-chart", "no step records") + "</section>\n";
  if (m.header.oversubscribed)
    s += p("warning oversubscribed",
           "Ranks outnumbered a host's CPUs: the times marked * include waiting for a CPU. In the exchange, the "
           "time the ranks were held up by a rank without a CPU after the last one arrived is its own part, "
           "descheduled; data, compute and transfer are longer by theirs.");
  const std::map<int, SplitMeans> means = split_means(m);
  s += split_chart(means) + split_table(means, m.header.oversubscribed) + what_if_line(m.header);
  s += p("caption",
         "Means over each rank's logged steps. The exchange (comm_s) splits into three parts that do not overlap "
         "and add up to it (docs/metrics.md): wait = from this rank's arrival to the last rank's arrival, on rank "
         "0's clock; descheduled = after that, the longest time any rank was runnable without a CPU (run_delay), "
         "which holds the whole ring up; transfer = the rest, moving bytes. The last rank to arrive waits 0. This "
         "rank's exchange time on a CPU and its own run_delay are measured beside them.");
  return s + "</section>\n";
}

std::string arrival_section(const Metrics& m) {
  std::string s = "<section id=\"arrivals\">\n<h2>Who was late: arrival order at the gradient exchange</h2>\n";
  const ArrivalTally t = tally_arrivals(m);
  if (t.steps == 0)
    return s + no_data("arrival-strip", "no step records with arrival times (arrive_s)") + "</section>\n";
  const int w = int(t.last_count.size());
  std::map<int, std::vector<std::pair<double, int>>> order;  // step -> (arrive_s, rank), sorted
  for (const ReportStep& r : m.steps)
    if (r.has_arrival && r.rank >= 0 && r.rank < w) order[r.step].push_back({r.arrive_s, r.rank});
  const double cell_w = std::max(6.0, std::min(28.0, 900.0 / double(order.size())));
  const double cell_h = std::max(8.0, std::min(20.0, 240.0 / w));
  const double left = 80, top = 10, width = left + cell_w * double(order.size()) + 20, height = top + cell_h * w + 40;
  std::string svg = svg_begin("arrival-strip", width, height, "arrival order per logged step");
  for (int k = 0; k < w; ++k)
    svg += svg_text(left - 6, top + cell_h * (k + 0.7),
                    k == 0       ? "first"
                    : k == w - 1 ? "last"
                                 : std::to_string(k + 1),
                    "end", "class=\"tick\"");
  int col = 0;
  for (auto& [step, ranks] : order) {
    std::sort(ranks.begin(), ranks.end());
    for (size_t k = 0; k < ranks.size(); ++k) {
      const int r = ranks[k].second;
      svg += svg_rect(left + cell_w * col, top + cell_h * double(k), cell_w - 1, cell_h - 1, series_color(r),
                      "class=\"arrival\" data-rank=\"" + std::to_string(r) + "\"",
                      "step " + std::to_string(step) + ": rank " + std::to_string(r) + " arrived " +
                          std::to_string(k + 1) + " of " + std::to_string(ranks.size()) + ", " + ms(ranks[k].first) +
                          " after the first");
      if (cell_w >= 12 && cell_h >= 12)
        svg += svg_text(left + cell_w * (col + 0.5) - 0.5, top + cell_h * (double(k) + 0.72), std::to_string(r),
                        "middle", "class=\"arrival-rank\" fill=\"#fff\" font-size=\"10\"");
    }
    ++col;
  }
  svg += svg_text(left, height - 12, "logged steps, in order (" + std::to_string(order.size()) + ")", "start",
                  "class=\"axis-title\"");
  s += svg + svg_end();
  const int r = t.most_often_last, n = t.last_count[size_t(r)];
  s += "<p id=\"last-to-arrive\" data-rank=\"" + std::to_string(r) + "\"><strong>Rank " + std::to_string(r) +
       " arrived last most often</strong>: at " + std::to_string(n) + " of " + std::to_string(t.steps) +
       " logged steps, on average " + ms(t.mean_arrive_s[size_t(r)]) + " after the first rank.</p>\n";
  s += "<table id=\"arrival-table\">\n<tr><th>rank</th><th>times last</th><th>mean arrival after the first</th></tr>\n";
  for (int k = 0; k < w; ++k)
    s += "<tr><td>" + std::to_string(k) + "</td><td class=\"num\">" + std::to_string(t.last_count[size_t(k)]) +
         "</td><td class=\"num\">" + ms(t.mean_arrive_s[size_t(k)]) + "</td></tr>\n";
  s += "</table>\n";
  s += p("caption",
         "Each column is a logged step; its cells are the ranks in the order they began the gradient exchange "
         "(arrive_s: on rank 0's clock, after the first rank). The last rank is the one every other rank waited "
         "for: Horovod's negotiation ticks show the same, here for every rank and step.");
  return s + "</section>\n";
}
