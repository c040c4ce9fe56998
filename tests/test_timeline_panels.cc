// test_timeline_panels: the report's pictures of our allreduce algorithms (issue 24). Traces
// written by the real formatter (src/trace_json.cc) from the closed form's steps (src/
// allreduce_plan.h) at W = 4 and 8, ring and halving-doubling: the small multiples have one panel
// per algorithm step plus the start, one arrow per message labelled with its chunk, and partial
// sums that end as the full sum on every rank (and, for the ring, one full chunk per rank after
// the reduce-scatter); the lane chart colours steps by phase, labels arrows with chunks, says
// "rank" not "pid", dashes arrows within the clock-error bound, and never clips a lane label; above
// the lanes one band per algorithm step states its rule ("rank r -> r+1 sends chunk (r-1) mod 8"),
// and the ring's wrap-around arrows go round by the chart's edges instead of across every lane.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "reporting/algorithm_steps.h"
#include "reporting/timeline_lanes.h"
#include "reporting/timeline_reader.h"
#include "tests/algorithm_trace.h"

namespace {

using algorithm_trace::trace_of;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// The text of panel k of the small multiples.
std::string panel(const std::string& svg, size_t k) {
  size_t at = 0;
  for (size_t i = 0; i <= k; ++i) at = svg.find("<g class=\"algo-panel\"", at + 1);
  if (at == std::string::npos) return "";
  const size_t end = svg.find("</g>\n</g>\n", at);  // the panel's drawing and the panel close
  return svg.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

const std::string kFull = "fill=\"#1b3a5c\"";  // a piece holding the full sum

TEST(TimelinePanels, RingAtFourAndEightRanks) {
  for (int w : {4, 8}) {
    const Timeline t = parse_timeline_text(trace_of(AllreduceAlgorithm::kRing, w), "ring.json");
    const std::string svg = algorithm_steps_svg(t, 0);
    ASSERT_EQ(svg.find("<svg id=\"algorithm-steps\""), 0u) << svg.substr(0, 200);
    const size_t steps = 2 * size_t(w - 1);
    EXPECT_EQ(count(svg, "<g class=\"algo-panel\""), steps + 1);
    EXPECT_EQ(count(svg, "<g class=\"msg\""), steps * size_t(w));  // every rank sends one chunk per step
    // Panel 1, reduce-scatter 1/(W-1): rank r sends chunk r to r+1.
    const std::string first = panel(svg, 1);
    EXPECT_NE(first.find("1. reduce-scatter 1/" + std::to_string(w - 1)), std::string::npos);
    for (int r = 0; r < w; ++r)
      EXPECT_NE(first.find("rank " + std::to_string(r) + " -&gt; rank " + std::to_string((r + 1) % w) + ", chunk " +
                           std::to_string(r) + " of " + std::to_string(w)),
                std::string::npos)
          << "W=" << w << " rank " << r;
    EXPECT_EQ(count(first, "class=\"chunk-label\">c"), size_t(w));  // one chunk label per arrow
    // The start: nobody holds a full sum; after the reduce-scatter each rank holds one full chunk;
    // at the end every rank holds every chunk's full sum.
    EXPECT_EQ(count(panel(svg, 0), kFull), 0u);
    EXPECT_EQ(count(panel(svg, size_t(w - 1)), kFull), size_t(w));
    EXPECT_EQ(count(panel(svg, steps), kFull), size_t(w * w));
    EXPECT_NE(panel(svg, size_t(w - 1)).find("rank 0, elements ["), std::string::npos);
  }
}

TEST(TimelinePanels, HalvingDoublingAtFourAndEightRanks) {
  for (int w : {4, 8}) {
    const Timeline t = parse_timeline_text(trace_of(AllreduceAlgorithm::kHalvingDoubling, w), "hd.json");
    const std::string svg = algorithm_steps_svg(t, 0);
    const size_t levels = w == 4 ? 2 : 3, steps = 2 * levels;
    EXPECT_EQ(count(svg, "<g class=\"algo-panel\""), steps + 1);
    EXPECT_EQ(count(svg, "<g class=\"msg\""), steps * size_t(w));
    // Level 1 pairs r with r^1 and sends halves: chunk 0 or 1 of 2.
    EXPECT_NE(panel(svg, 1).find("rank 0 -&gt; rank 1, chunk 1 of 2"), std::string::npos);
    EXPECT_NE(panel(svg, 1).find("rank 1 -&gt; rank 0, chunk 0 of 2"), std::string::npos);
    // after the reduce-scatter each rank holds 1/W of the vector fully summed; at the end, all of it
    EXPECT_EQ(count(panel(svg, levels), kFull), size_t(w));
    EXPECT_EQ(count(panel(svg, steps), kFull), size_t(w * w));
  }
}

TEST(TimelinePanels, NoPanelsWithoutAlgorithmSteps) {
  const std::string gradient_only =
      "[{\"ph\":\"X\",\"name\":\"allreduce\",\"cat\":\"comm\",\"pid\":0,\"tid\":1000,\"ts\":1,\"dur\":2,"
      "\"args\":{\"step\":0}}]";
  EXPECT_EQ(algorithm_steps_svg(parse_timeline_text(gradient_only, "t.json"), 0), "");
}

TEST(TimelinePanels, LaneChartColoursPhasesLabelsChunksAndMarksTheClockBound) {
  // Every message takes 90 us (a step's length): with a 40 us bound per rank (80 us between two),
  // no arrow is shorter than the bound; with 50 ms each is.
  const std::string ring = trace_of(AllreduceAlgorithm::kRing, 4, 40);
  std::string svg = timeline_lanes_svg(parse_timeline_text(ring, "ring.json"), 0);
  EXPECT_EQ(count(svg, "<path class=\"flow"), 24u);
  EXPECT_EQ(count(svg, "<path class=\"flow wrap\""), 6u);  // 3 -> 0 goes round, not across every lane
  EXPECT_EQ(count(svg, "in-clock-bound"), 0u);
  EXPECT_EQ(svg.find("pid "), std::string::npos);
  EXPECT_EQ(count(svg, "fill=\"" + std::string(phase_color("reduce-scatter")) + "\" class=\"slice\""), 12u);
  EXPECT_EQ(count(svg, "fill=\"" + std::string(phase_color("allgather")) + "\" class=\"slice\""), 12u);
  EXPECT_EQ(count(svg, "class=\"chunk-label\">c"), 24u);
  EXPECT_NE(svg.find("ring reduce-scatter 1/3: chunk 0 (21840 B): rank 0 -&gt; rank 1"), std::string::npos);
  svg = timeline_lanes_svg(parse_timeline_text(trace_of(AllreduceAlgorithm::kRing, 4, 50000), "ring.json"), 0);
  EXPECT_EQ(count(svg, "in-clock-bound\""), 24u);
  EXPECT_NE(svg.find("within the clock-error bound (100000 us)"), std::string::npos);
}

TEST(TimelinePanels, LaneLabelsNeverClip) {
  // A host name of 60 characters: the plot starts right of the longest label.
  const std::string host(60, 'h');
  const std::string svg =
      timeline_lanes_svg(parse_timeline_text(trace_of(AllreduceAlgorithm::kRing, 4, 0, host), "t.json"), 0);
  const std::string label = "rank 0 @ " + host + " \xc2\xb7 comm";  // 76 code points
  const size_t at = svg.find("<rect class=\"lane\" x=\"");
  ASSERT_NE(at, std::string::npos);
  const double left = std::stod(svg.substr(at + 22));
  EXPECT_GE(left, 6.4 * 76) << "the lane label (" << label << ") would clip at x=" << left;
}

// The band of each algorithm step: (the text of) every <g class="step-band"> in order.
std::vector<std::string> bands_of(const std::string& svg) {
  std::vector<std::string> out;
  for (size_t at = svg.find("<g class=\"step-band\""); at != std::string::npos;
       at = svg.find("<g class=\"step-band\"", at + 1))
    out.push_back(svg.substr(at, svg.find("</g>", at) - at));
  return out;
}

// The label text of a band.
std::string band_label(const std::string& band) {
  const size_t at = band.find("class=\"band-label\"");
  if (at == std::string::npos) return "";
  const size_t from = band.find('>', at) + 1;
  return band.substr(from, band.find("</text>", from) - from);
}

// The y of a band's bar.
double band_y(const std::string& band) {
  const size_t at = band.find("class=\"band-bar\"");
  return at == std::string::npos ? -1 : std::stod(band.substr(band.find("y=\"", at) + 3));
}

TEST(TimelinePanels, LaneChartHasOneLabelledBandPerAlgorithmStep) {
  const std::string arrow = " \xe2\x86\x92 ";
  const std::string svg = timeline_lanes_svg(parse_timeline_text(trace_of(AllreduceAlgorithm::kRing, 8), "r.json"), 0);
  const std::vector<std::string> bands = bands_of(svg);
  ASSERT_EQ(bands.size(), 14u);  // 7 reduce-scatter and 7 allgather steps
  // Step s of the reduce-scatter: rank r sends chunk (r-s) mod 8 to r+1; the allgather passes on the
  // finished chunk (r+1-s) mod 8. 87360 bytes / 8 = 10920 per message.
  const char* const rules[14] = {"chunk r",           "chunk (r-1) mod 8", "chunk (r-2) mod 8", "chunk (r-3) mod 8",
                                 "chunk (r-4) mod 8", "chunk (r+3) mod 8", "chunk (r+2) mod 8", "chunk (r+1) mod 8",
                                 "chunk r",           "chunk (r-1) mod 8", "chunk (r-2) mod 8", "chunk (r-3) mod 8",
                                 "chunk (r-4) mod 8", "chunk (r+3) mod 8"};
  for (size_t k = 0; k < 14; ++k) {
    const std::string phase = k < 7 ? "reduce-scatter" : "allgather";
    EXPECT_EQ(band_label(bands[k]), "ring " + phase + " " + std::to_string(k % 7 + 1) + "/7: rank r" + arrow +
                                        "r+1 sends " + rules[k] + ", 10920 B each")
        << k;
    EXPECT_NE(bands[k].find("data-phase=\"" + phase + "\""), std::string::npos) << k;
    if (k > 0) {
      EXPECT_GT(band_y(bands[k]), band_y(bands[k - 1])) << "the bands read top to bottom in order: " << k;
    }
  }
  // Above the lanes.
  const size_t first_lane = svg.find("<rect class=\"lane\" x=\"");
  ASSERT_NE(first_lane, std::string::npos);
  const double lanes_top = std::stod(svg.substr(svg.find("y=\"", first_lane) + 3));
  EXPECT_LT(band_y(bands.back()), lanes_top);
  // Halving-doubling: pairs r xor 2^j, halves then quarters then eighths.
  const std::string hd =
      timeline_lanes_svg(parse_timeline_text(trace_of(AllreduceAlgorithm::kHalvingDoubling, 8), "h.json"), 0);
  const std::vector<std::string> hd_bands = bands_of(hd);
  ASSERT_EQ(hd_bands.size(), 6u);
  EXPECT_EQ(band_label(hd_bands[0]),
            "halving-doubling reduce-scatter 1/3: rank r \xe2\x86\x94 r xor 1 sends 1/2 of the vector, 43680 B each");
  EXPECT_EQ(band_label(hd_bands[2]),
            "halving-doubling reduce-scatter 3/3: rank r \xe2\x86\x94 r xor 4 sends 1/8 of the vector, 10920 B each");
  EXPECT_EQ(count(hd, "<path class=\"flow wrap"), 0u);  // r <-> r xor 4 is drawn straight for every pair
}

// Every pixel y of a path's "M x y L x y M x y L x y".
std::vector<double> path_ys(const std::string& d) {
  std::vector<double> ys;
  std::istringstream in(d);
  std::string op;
  double x = 0, y = 0;
  while (in >> op >> x >> y) ys.push_back(y);
  return ys;
}

TEST(TimelinePanels, RingWrapAroundArrowsGoRoundTheLanes) {
  const std::string svg = timeline_lanes_svg(parse_timeline_text(trace_of(AllreduceAlgorithm::kRing, 8), "r.json"), 0);
  EXPECT_EQ(count(svg, "<path class=\"flow"), 112u);
  // Rank 7 -> rank 0, once per step: out at the bottom edge, in again at the top.
  EXPECT_EQ(count(svg, "<path class=\"flow wrap\""), 14u);
  const size_t first_lane = svg.find("<rect class=\"lane\" x=\"");
  const size_t last_lane = svg.rfind("<rect class=\"lane\" x=\"");
  const double top = std::stod(svg.substr(svg.find("y=\"", first_lane) + 3));
  const double last_top = std::stod(svg.substr(svg.find("y=\"", last_lane) + 3));
  const double bottom = last_top + std::stod(svg.substr(svg.find("height=\"", last_lane) + 8));
  for (size_t at = svg.find("<path class=\"flow wrap\""); at != std::string::npos;
       at = svg.find("<path class=\"flow wrap\"", at + 1)) {
    const size_t d = svg.find(" d=\"", at) + 4;
    const std::vector<double> ys = path_ys(svg.substr(d, svg.find('"', d) - d));
    ASSERT_EQ(ys.size(), 4u);
    EXPECT_GE(ys[0], last_top) << "sent from rank 7's lanes";
    EXPECT_GT(ys[1], bottom - 8) << "leaves at the bottom edge";
    EXPECT_LT(ys[2], top) << "comes in at the top edge";
    EXPECT_LT(ys[3], top + 40) << "received in rank 0's lanes";
  }
  // The legend says what a cut arrow is.
  EXPECT_NE(svg.find("edge wraps round (last rank \xe2\x86\x94 first)"), std::string::npos);
  // Its entries about arrows (a message, a cut arrow) go with the arrows when the page collapses them.
  EXPECT_EQ(count(svg, "<g class=\"legend-item\" data-legend=\"arrows\">"), 2u);
}

}  // namespace
