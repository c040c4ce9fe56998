// test_timeline_lanes: the report's lane chart of one optimizer step (reporting/timeline_lanes.h)
// and the ./report flags around it. A hand-built 2-rank trace (compute and comm track per rank,
// a ring step pair per optimizer step with s/f flow events both ways) gives one lane per (rank,
// track), one <rect> per slice of the chosen step and none of the others, an arrow per flow pair
// of that step, tooltips with the args; a track idle in the step gets no (empty) lane; slices that
// touch within the file's rounding stay on one row; default_lane_step is the median step after
// the first. The command: --step N not recorded is one exact line and exit 1, --section timeline
// writes only that section, and a real 2-rank Gloo ring run's page holds one lane group per rank.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "reporting/timeline_lanes.h"
#include "reporting/timeline_reader.h"
#include "tests/test_util.h"

namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::string slice(const std::string& name, const std::string& cat, int pid, int tid, double ts, double dur,
                  const std::string& args) {
  return "{\"ph\":\"X\",\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + num(ts) + ",\"dur\":" + num(dur) + ",\"args\":{" + args +
         "}},\n";
}

std::string flow(const char* ph, const std::string& id, int pid, double ts) {
  return std::string("{\"ph\":\"") + ph + "\",\"name\":\"ring message\",\"cat\":\"allreduce flow\",\"id\":" + id +
         ",\"pid\":" + std::to_string(pid) + ",\"tid\":1000,\"ts\":" + num(ts) + "},\n";
}

// Two ranks, tracks "compute 0" (tid 1) and "comm" (tid 1000); optimizer steps first..last, step k
// starting at 10000 k us and lasting span(k): batch read, forward, backward, then on the comm track
// the allreduce, the ring allreduce inside it and its two steps, each step a message to the other
// rank (s on the sender at the step's start, f on the receiver at the step's end), then the
// optimizer step. Flow ids are 100 k + 10 rank + algo step.
std::string ring_events(long first, long last, double (*span)(long) = nullptr) {
  std::string s;
  for (int r = 0; r < 2; ++r) {
    s += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(r) +
         ",\"tid\":0,\"args\":{\"name\":\"rank " + std::to_string(r) + " @ localhost\"}},\n";
    s += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(r) +
         ",\"tid\":1,\"args\":{\"name\":\"compute 0\"}},\n";
    s += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(r) +
         ",\"tid\":1000,\"args\":{\"name\":\"comm\"}},\n";
  }
  for (long k = first; k <= last; ++k) {
    const double t0 = 10000.0 * double(k), d = span ? span(k) : 1000;
    const std::string st = "\"step\":" + std::to_string(k);
    for (int r = 0; r < 2; ++r) {
      const int peer = 1 - r;
      s += slice("batch read", "data", r, 1, t0, 0.05 * d, st);
      s += slice("forward", "forward", r, 1, t0 + 0.05 * d, 0.2 * d, st);
      s += slice("backward", "backward", r, 1, t0 + 0.25 * d, 0.2 * d, st);
      s += slice("allreduce", "comm", r, 1000, t0 + 0.45 * d, 0.5 * d,
                 st + ",\"bytes\":87360,\"backend\":\"gloo\",\"algorithm\":\"ring\"");
      s += slice("ring allreduce", "comm", r, 1000, t0 + 0.46 * d, 0.48 * d,
                 st + ",\"call\":" + std::to_string(k) + ",\"algorithm\":\"ring\",\"bytes\":87360");
      for (int a = 0; a < 2; ++a) {
        const double ts = t0 + 0.46 * d + 0.24 * d * a, dur = 0.24 * d;
        s += slice(
            std::string(a ? "ring allgather 1" : "ring reduce-scatter 0") + " -> rank " + std::to_string(peer), "comm",
            r, 1000, ts, dur,
            st + ",\"algo_step\":" + std::to_string(a) + ",\"peer\":" + std::to_string(peer) + ",\"bytes\":43680");
        const std::string id = std::to_string(100 * k + 10 * r + a);
        s += flow("s", id, r, ts);
        s += flow("f", id, peer, ts + dur);
      }
      s += slice("optimizer step", "optimizer", r, 1, t0 + 0.96 * d, 0.03 * d, st);
    }
  }
  return s;
}

// Events (each ending ",\n") as a strict JSON array.
std::string array_of(const std::string& events) {
  return "[\n" + events.substr(0, events.size() >= 2 ? events.size() - 2 : 0) + "\n]\n";
}

std::string ring_trace(long first, long last, double (*span)(long) = nullptr) {
  return array_of(ring_events(first, last, span));
}

std::string svg_of(const std::string& trace, long step) {
  return timeline_lanes_svg(parse_timeline_text(trace, "ring.json"), step);
}

TEST(TimelineLanes, OneLanePerRankAndTrackOneRectPerSliceOfTheStep) {
  const std::string svg = svg_of(ring_trace(0, 2), 1);
  ASSERT_EQ(svg.find("<svg id=\"timeline-lanes\""), 0u) << svg.substr(0, 200);
  EXPECT_EQ(count(svg, "<rect class=\"lane\""), 4u);
  for (const char* lane : {"data-pid=\"0\" data-tid=\"1\"", "data-pid=\"0\" data-tid=\"1000\"",
                           "data-pid=\"1\" data-tid=\"1\"", "data-pid=\"1\" data-tid=\"1000\""})
    EXPECT_EQ(count(svg, lane), 1u) << lane;
  EXPECT_EQ(count(svg, "<g class=\"rank-lanes\""), 2u);
  EXPECT_EQ(count(svg, "rank 0 @ localhost \xc2\xb7 comm"), 1u);
  // 7 slices drawn per rank in step 1 (the "ring allreduce" call slice spans the same time as the
  // "allreduce" around it and is not drawn twice); steps 0 and 2 hold as many, none of which may appear.
  EXPECT_EQ(count(svg, "class=\"slice\""), 14u);
  EXPECT_EQ(count(svg, "class=\"slice\" data-rank=\"0\""), 7u);
  EXPECT_EQ(count(svg, "\nstep: 1"), 14u);
  EXPECT_EQ(count(svg, "\nstep: 0"), 0u);
  EXPECT_EQ(count(svg, "\nstep: 2"), 0u);
  const size_t group1 = svg.find("</g>\n<g class=\"rank-lanes\" data-rank=\"1\">");
  ASSERT_NE(group1, std::string::npos);
  EXPECT_GT(group1, svg.rfind("data-rank=\"0\">"));  // every rank-0 slice inside rank 0's group
  EXPECT_LT(group1, svg.find("class=\"slice\" data-rank=\"1\""));
}

TEST(TimelineLanes, AnArrowPerFlowPairOfTheStepOnly) {
  const std::string svg = svg_of(ring_trace(0, 2), 1);
  // Step 1: each rank's two ring steps send one message each; steps 0 and 2 send 4 more apiece.
  EXPECT_EQ(count(svg, "<path class=\"flow\""), 4u);
  EXPECT_EQ(count(svg, "ring message: rank 0 -&gt; rank 1"), 2u);
  EXPECT_EQ(count(svg, "ring message: rank 1 -&gt; rank 0"), 2u);
  EXPECT_EQ(svg.find("pid 0"), std::string::npos);
  EXPECT_EQ(count(svg, "marker-end=\"url(#lane-arrow)\""), 4u);
  // A flow whose receive lies outside every slice of the step is not drawn.
  const std::string stray = flow("s", "999", 0, 10460) + flow("f", "999", 1, 90000);
  EXPECT_EQ(count(svg_of(array_of(ring_events(1, 1) + stray), 1), "<path class=\"flow\""), 4u);
  EXPECT_EQ(parse_timeline_text(array_of(ring_events(1, 1) + stray), "t.json").flows.size(), 5u);
}

TEST(TimelineLanes, TitlesCarryTheArgs) {
  const std::string svg = svg_of(ring_trace(0, 2), 1);
  EXPECT_NE(svg.find("<title>ring reduce-scatter 0 -&gt; rank 1\nstart +"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "algo_step: 0\n"), 2u);
  EXPECT_EQ(count(svg, "peer: 1\n"), 2u);
  EXPECT_EQ(count(svg, "bytes: 43680</title>"), 4u);
  // the call slice's args are in the tooltip of the allreduce around it
  EXPECT_EQ(count(svg,
                  "backend: gloo\nalgorithm: ring\n-- ring allreduce --\ncall: 1\nalgorithm: ring\nbytes: "
                  "87360</title>"),
            2u);
  EXPECT_NE(svg.find(">algorithm step</text>"), std::string::npos);  // the legend names the kinds drawn
}

int lane_rows(const std::string& svg, const std::string& pid_tid) {
  const size_t at = svg.find(pid_tid);
  if (at == std::string::npos) return -1;
  const size_t h = svg.rfind("height=\"", at);
  return int(std::stod(svg.substr(h + 8)) / 16 + 0.5);
}

TEST(TimelineLanes, CommLaneHasExactlyItsNestingRows) {
  // allreduce > ring steps (the call slice is not drawn): two rows, no more.
  EXPECT_EQ(lane_rows(svg_of(ring_trace(0, 2), 1), "data-pid=\"0\" data-tid=\"1000\""), 2);
  EXPECT_EQ(lane_rows(svg_of(ring_trace(0, 2), 1), "data-pid=\"0\" data-tid=\"1\""), 1);
  // The second ring step written to start 1 ns before the first ends (3-decimal rounding) is its
  // sibling, not its child: still two rows.
  std::string trace = ring_trace(1, 1);
  const std::string second =
      "\"name\":\"ring allgather 1 -> rank 1\",\"cat\":\"comm\",\"pid\":0,\"tid\":1000,\"ts\":10700.000";
  const size_t at = trace.find(second);
  ASSERT_NE(at, std::string::npos) << trace;
  trace.replace(at, second.size(),
                "\"name\":\"ring allgather 1 -> rank 1\",\"cat\":\"comm\",\"pid\":0,\"tid\":1000,\"ts\":10699.999");
  EXPECT_EQ(lane_rows(svg_of(trace, 1), "data-pid=\"0\" data-tid=\"1000\""), 2);
}

TEST(TimelineLanes, TrackIdleInTheStepGetsNoEmptyLane) {
  // Step 3 is a test pass: one slice on each compute track, nothing on comm.
  const std::string trace = array_of(ring_events(1, 2) + slice("test pass", "test", 0, 1, 40000, 500, "\"step\":3") +
                                     slice("test pass", "test", 1, 1, 40000, 520, "\"step\":3"));
  const std::string svg = svg_of(trace, 3);
  EXPECT_EQ(count(svg, "<rect class=\"lane\""), 2u);
  EXPECT_EQ(count(svg, "data-tid=\"1000\""), 0u);
  EXPECT_EQ(count(svg, "class=\"slice\""), 2u);
  EXPECT_NE(svg.find("class=\"lanes-idle\">no slice in step 3: rank 0 @ localhost \xc2\xb7 comm, rank 1 @ localhost "
                     "\xc2\xb7 comm</text>"),
            std::string::npos)
      << svg;
  EXPECT_EQ(count(svg_of(trace, 1), "lanes-idle"), 0u);
}

double spans(long k) {
  const double by_step[] = {9000, 1000, 3000, 2000, 4000, 6000};
  return by_step[k];
}

TEST(TimelineLanes, DefaultStepIsTheMedianAfterTheFirst) {
  // After step 0 (the slowest, warm-up): spans 1000, 3000, 2000 -> the median, 2000, is step 3.
  EXPECT_EQ(default_lane_step(parse_timeline_text(ring_trace(0, 3, spans), "t.json")), 3);
  // Steps 1-5 after the first: 3000 2000 4000 6000 -> sorted 2000 3000 4000 6000, lower median 3000.
  EXPECT_EQ(default_lane_step(parse_timeline_text(ring_trace(0, 5, spans), "t.json")), 2);
  EXPECT_EQ(default_lane_step(parse_timeline_text(ring_trace(4, 4, spans), "t.json")), 4);
  // No step at all: slices without args.step, or none.
  EXPECT_EQ(default_lane_step(parse_timeline_text(
                "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":0,\"tid\":1,\"ts\":1,\"dur\":2}]", "t.json")),
            -1);
  EXPECT_EQ(default_lane_step(parse_timeline_text("[]", "t.json")), -1);
}

// ---- the command -----------------------------------------------------------------------------

std::string report_bin() { return testutil::env_or("BARESGD_REPORT", "./report"); }

const char* const kMetrics =
    "{\"type\":\"header\",\"format\":\"baresgd-metrics\",\"version\":1,\"world_size\":2,\"backend\":\"gloo\","
    "\"algorithm\":\"ring\",\"hosts\":[\"localhost\",\"localhost\"],\"versions\":{},\"flags\":{}}\n"
    "{\"type\":\"step\",\"epoch\":1,\"batch\":0,\"step\":0,\"rank\":0,\"loss\":2.3,\"lr\":0.01,\"grad_norm\":1,"
    "\"data_s\":0.001,\"compute_s\":0.002,\"comm_s\":0.001,\"wait_s\":0,\"step_s\":0.004,\"samples_per_s\":16000,"
    "\"allreduce_bytes\":87360}\n"
    "{\"type\":\"summary\",\"world_size\":2,\"backend\":\"gloo\",\"algorithm\":\"ring\",\"epochs\":0,\"train_s\":0.01,"
    "\"samples_per_s\":20000,\"comm_share\":0.3,\"test_accuracy\":null,\"steps\":3}\n";

struct Dir {
  Dir() : path(testutil::make_temp_dir("lanes")) {}
  ~Dir() { testutil::run("rm -rf '" + path + "'"); }
  std::string path;
};

TEST(TimelineLanesCommand, StepNotRecordedIsOneExactLine) {
  Dir d;
  testutil::write_file(d.path + "/m.jsonl", kMetrics);
  testutil::write_file(d.path + "/t.json", ring_trace(3, 5));
  const std::string base = report_bin() + " " + d.path + "/m.jsonl " + d.path + "/t.json -o " + d.path + "/page.html";
  testutil::RunResult r = testutil::run(base + " --step 9");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "report: --step 9: not a step recorded in " + d.path + "/t.json (it holds steps 3-5)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(testutil::run("test -e " + d.path + "/page.html").status == 0) << "a page was written anyway";
  r = testutil::run(base + " --step 4");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string html = testutil::read_file(d.path + "/page.html");
  EXPECT_NE(html.find("Step 4 (--step)"), std::string::npos);
  EXPECT_EQ(count(html, "\nstep: 4"), 14u);
  EXPECT_EQ(count(html, "\nstep: 5"), 0u);
  r = testutil::run(base + " --step x");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "report: --step needs a step number >= 0, not 'x' (see report --help)\n");
}

TEST(TimelineLanesCommand, SectionTimelineWritesOnlyThatSection) {
  Dir d;
  testutil::write_file(d.path + "/m.jsonl", kMetrics);
  testutil::write_file(d.path + "/t.json", ring_trace(0, 2));
  const std::string base = report_bin() + " " + d.path + "/m.jsonl " + d.path + "/t.json -o " + d.path + "/page.html";
  ASSERT_EQ(testutil::run(base).status, 0);
  const std::string full = testutil::read_file(d.path + "/page.html");
  EXPECT_NE(full.find("id=\"run-summary\""), std::string::npos);
  EXPECT_NE(full.find("<svg id=\"loss-chart\""), std::string::npos);
  // No test pass in the run: the accuracy card is "n/a" with no unit.
  EXPECT_NE(full.find("<div class=\"value\">n/a</div><div class=\"name\">test accuracy</div>"), std::string::npos);
  EXPECT_EQ(full.find("n/a %"), std::string::npos);

  const testutil::RunResult r = testutil::run(base + " --section timeline");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string html = testutil::read_file(d.path + "/page.html");
  EXPECT_EQ(count(html, "<section"), 2u);
  EXPECT_NE(html.find("<section id=\"run-header\">"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"timeline\">"), std::string::npos);
  EXPECT_EQ(count(html, "<svg id="), 1u);
  EXPECT_NE(html.find("<svg id=\"timeline-lanes\""), std::string::npos);
  EXPECT_EQ(html.find("run-summary"), std::string::npos);
  EXPECT_NE(html.rfind("</html>\n"), std::string::npos);
  const testutil::RunResult bad = testutil::run(report_bin() + " " + d.path + "/m.jsonl -o x.html --section timeline");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "report: --section timeline needs a TIMELINE file (see report --help)\n");
}

// A real 2-rank Gloo run on loopback with our ring (so there are flow events), 3 steps.
TEST(TimelineLanesCommand, RealRingRunHasOneLaneGroupPerRank) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  Dir d;
  const std::string m = d.path + "/m.jsonl", t = d.path + "/t.json", page = d.path + "/page.html";
  testutil::RunResult r = testutil::run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() +
                                            " --max-steps 3 --allreduce ring --timeline " + t + " --metrics " + m,
                                        300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = testutil::run(report_bin() + " " + m + " " + t + " -o " + page);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string html = testutil::read_file(page);
  const size_t at = html.find("<svg id=\"timeline-lanes\"");
  ASSERT_NE(at, std::string::npos);
  const std::string svg = html.substr(at, html.find("</svg>", at) - at);
  EXPECT_EQ(count(svg, "<g class=\"rank-lanes\""), 2u);
  EXPECT_EQ(count(svg, "<g class=\"rank-lanes\" data-rank=\"0\">"), 1u);
  EXPECT_EQ(count(svg, "<g class=\"rank-lanes\" data-rank=\"1\">"), 1u);
  // Each rank: its compute track and its comm track, nesting allreduce > steps.
  EXPECT_EQ(count(svg, "<rect class=\"lane\""), 4u);
  EXPECT_EQ(lane_rows(svg, "data-pid=\"0\" data-tid=\"1000\""), 2);
  EXPECT_EQ(lane_rows(svg, "data-pid=\"1\" data-tid=\"1000\""), 2);
  // The drawn step, the faster of steps 1 and 2: each rank's two ring steps send the other a message.
  const long step = default_lane_step(read_timeline_file(t));
  EXPECT_TRUE(step == 1 || step == 2) << step;
  EXPECT_NE(html.find("Step " + std::to_string(step) + " (the median-duration"), std::string::npos);
  EXPECT_EQ(count(svg, "<path class=\"flow"), 4u);  // "flow in-clock-bound" when shorter than the bound
  EXPECT_EQ(count(svg, "\nstep: " + std::to_string(step)), count(svg, "class=\"slice\""));
  // The step slices are labelled ring reduce-scatter 1/1, allgather 1/1 and carry their chunks.
  EXPECT_EQ(count(svg, "<title>ring reduce-scatter 1/1\n"), 2u);
  EXPECT_EQ(count(svg, "<title>ring allgather 1/1\n"), 2u);
  EXPECT_EQ(count(svg, ">c0</text>") + count(svg, ">c1</text>"), 4u);  // each arrow labelled with its chunk
  // Beside the lanes: the clock bound and the small multiples (start + 2 steps).
  EXPECT_NE(html.find("id=\"clock-bound\">Clock-error bound"), std::string::npos);
  EXPECT_EQ(count(html, "<g class=\"algo-panel\""), 3u);
  EXPECT_GT(count(svg, "class=\"slice\""), 10u);
}

}  // namespace
