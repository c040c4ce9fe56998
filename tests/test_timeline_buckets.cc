// test_timeline_buckets: --overlap on's bucket exchanges on the timeline (src/timeline_buckets.h).
// The record's JSON lines (the bucket's slice, its send and wait inside it, on track 1001 + b), and
// real 2-rank Gloo runs: with --overlap on every rank has, per recorded step, one slice per bucket
// on its named "comm bucket" track, the fc2+fc1 bucket's slice begins before the conv2 and conv1
// backward slices and ends after conv1's (its exchange runs under them), no rank's wait ends
// before the other rank sent (one clock), the gradient allreduce slice stays, and ./report's
// reader and lane chart take the file; with --overlap off there is no bucket slice or track.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "reporting/timeline_lanes.h"
#include "reporting/timeline_reader.h"
#include "src/timeline_buckets.h"
#include "src/trace_json.h"
#include "tests/mini_json.h"
#include "tests/test_util.h"

namespace {

using minijson::Value;
using testutil::read_file;
using testutil::run;

constexpr int kCompute0Tid = 1, kCommTid = 1000, kFirstBucketTid = 1001;

std::vector<Value> events_of(const std::string& text) {
  Value v = minijson::parse(text);
  EXPECT_EQ(v.type, Value::kArray);
  return v.arr;
}

// The event's tid, which every trace event has (a missing one must not read as 0).
int tid_of(const Value& e) {
  EXPECT_EQ(e["tid"].type, Value::kNumber) << "an event without a numeric tid: " << e["name"].s();
  return e["tid"].type == Value::kNumber ? int(e["tid"].n()) : -1;
}

bool is_slice(const Value& e, int pid, long long step) {
  return e["ph"].s() == "X" && int(e["pid"].n()) == pid && (long long)e["args"]["step"].n() == step;
}

// The slice named `name` on (pid, tid) in step; fails the test when there is not exactly one.
const Value* one_slice(const std::vector<Value>& ev, int pid, int tid, long long step, const std::string& name) {
  const Value* found = nullptr;
  int n = 0;
  for (const Value& e : ev)
    if (is_slice(e, pid, step) && tid_of(e) == tid && e["name"].s() == name) found = &e, ++n;
  EXPECT_EQ(n, 1) << name << " on rank " << pid << " tid " << tid << " step " << step;
  return n == 1 ? found : nullptr;
}

// The bucket slices ("allreduce <layers> (<bytes> B)") of rank pid in step, by bucket index.
std::map<int, const Value*> bucket_slices(const std::vector<Value>& ev, int pid, long long step) {
  std::map<int, const Value*> m;
  for (const Value& e : ev)
    if (is_slice(e, pid, step) && tid_of(e) >= kFirstBucketTid && e["name"].s().rfind("allreduce ", 0) == 0) {
      EXPECT_EQ(e["args"]["bucket"].type, Value::kNumber) << "a bucket slice without its bucket index";
      m[int(e["args"]["bucket"].n())] = &e;
    }
  return m;
}

std::set<std::string> thread_names(const std::vector<Value>& ev, int pid) {
  std::set<std::string> names;
  for (const Value& e : ev)
    if (e["ph"].s() == "M" && e["name"].s() == "thread_name" && int(e["pid"].n()) == pid)
      names.insert(e["args"]["name"].s());
  return names;
}

double end_of(const Value& e) { return e["ts"].n() + e["dur"].n(); }

// Rank r's recorded clock-error bound in microseconds (the clock_sync metadata; 0 for rank 0, whose
// clock is the reference). Fails the test when the trace has none.
double clock_error_bound_us(const std::vector<Value>& ev, int r) {
  for (const Value& e : ev)
    if (e["ph"].s() == "M" && e["name"].s() == "clock_sync") {
      const Value& bound = e["args"]["clock_error_bound_us"];
      if (size_t(r) < bound.arr.size()) return bound.arr[size_t(r)].n();
    }
  ADD_FAILURE() << "no clock_error_bound_us for rank " << r << " in the trace";
  return 0;
}

TEST(TimelineBucketTrace, FormatsABucketAsASliceWithItsSendAndWaitInside) {
  EXPECT_EQ(trace_tid(bucket_track(0)), 1001);
  EXPECT_EQ(trace_tid(bucket_track(2)), 1003);
  EXPECT_EQ(trace_tid(kCommTrack), 1000);
  EXPECT_EQ(bucket_track_name(0, "fc2+fc1"), "comm bucket 0: fc2+fc1");
  TraceContext c;
  c.rank = 1;
  c.offset_ns = 500;
  c.origin_ns = 1000;
  TimelineRecord r;
  r.kind = TimelineKind::kBucketExchange;
  r.track = bucket_track(0);
  r.step = 4;
  r.call = 0;
  r.phase = "fc2+fc1";
  r.bytes = 66240;
  r.begin_ns = 3000;       // start() called
  r.send_end_ns = 3500;    // start() returned
  r.wait_begin_ns = 9000;  // finish() waits
  r.end_ns = 12000;        // the wait ended
  std::string out = "[";
  size_t patch = std::string::npos;
  append_trace_record(&out, r, c, &patch);
  EXPECT_EQ(patch, std::string::npos);  // nothing to fill in at the merge
  out += trace_end(2);
  const std::vector<Value> ev = events_of(out);
  ASSERT_EQ(ev.size(), 4u);  // the bucket, its send, its wait, the end
  const Value& b = ev[0];
  EXPECT_EQ(b["ph"].s(), "X");
  EXPECT_EQ(b["name"].s(), "allreduce fc2+fc1 (66240 B)");
  EXPECT_EQ(b["cat"].s(), "comm");
  EXPECT_EQ(b["pid"].n(), 1);
  EXPECT_EQ(b["tid"].n(), 1001);
  EXPECT_EQ(b["ts"].n(), 1.5);  // 3000 - 500 - 1000 ns
  EXPECT_EQ(b["dur"].n(), 9.0);
  EXPECT_EQ(b["args"]["step"].n(), 4);
  EXPECT_EQ(b["args"]["bucket"].n(), 0);
  EXPECT_EQ(b["args"]["layers"].s(), "fc2+fc1");
  EXPECT_EQ(b["args"]["bytes"].n(), 66240);
  EXPECT_EQ(b["args"]["fp16"].type, Value::kBool);
  EXPECT_EQ(b["args"]["sending_us"].n(), 0.5);
  EXPECT_EQ(b["args"]["in_flight_us"].n(), 5.5);
  EXPECT_EQ(b["args"]["waiting_us"].n(), 3.0);
  EXPECT_EQ(ev[1]["name"].s(), "fc2+fc1 send");
  EXPECT_EQ(ev[1]["tid"].n(), 1001);
  EXPECT_EQ(ev[1]["ts"].n(), 1.5);
  EXPECT_EQ(ev[1]["dur"].n(), 0.5);
  EXPECT_EQ(ev[2]["name"].s(), "fc2+fc1 wait");
  EXPECT_EQ(ev[2]["ts"].n(), 7.5);
  EXPECT_EQ(ev[2]["dur"].n(), 3.0);
  for (int i : {1, 2}) {
    EXPECT_EQ(ev[size_t(i)]["args"]["bucket"].n(), 0);
    EXPECT_EQ(ev[size_t(i)]["args"]["step"].n(), 4);
  }
}

class TimelineBucketRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("tlbuckets");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  // 2 ranks on Gloo, one compute thread each (backward's layers then report as they finish).
  std::vector<Value> run_gloo(const std::string& overlap, const std::string& steps, const std::string& range) {
    const std::string file = dir + "/t.json";
    auto r = run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() + " --threads 1 --max-steps " +
                     steps + " --overlap " + overlap + " --timeline " + file + " --timeline-steps " + range,
                 300);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    text = read_file(file);
    return events_of(text);
  }
  std::string dir, text;
};

const std::vector<std::string> kBucketNames = {"allreduce fc2+fc1 (66240 B)", "allreduce conv2 (20080 B)",
                                               "allreduce conv1 (1040 B)"};

TEST_F(TimelineBucketRun, OverlapOnShowsTheFirstBucketInFlightUnderTheLastLayersBackward) {
  const std::vector<Value> ev = run_gloo("on", "5", "1-3");
  ASSERT_FALSE(ev.empty());
  const std::set<std::string> want = {"compute 0", "comm", "comm bucket 0: fc2+fc1", "comm bucket 1: conv2",
                                      "comm bucket 2: conv1"};
  for (int r = 0; r < 2; ++r) EXPECT_EQ(thread_names(ev, r), want) << "rank " << r;
  for (long long step = 1; step <= 3; ++step) {
    std::map<int, const Value*> b[2];
    for (int r = 0; r < 2; ++r) {
      const std::string at = "rank " + std::to_string(r) + " step " + std::to_string(step) + ": ";
      b[r] = bucket_slices(ev, r, step);
      ASSERT_EQ(b[r].size(), 3u) << at << "bucket slices";
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(b[r][i]->operator[]("name").s(), kBucketNames[size_t(i)]) << at;
        EXPECT_EQ(b[r][i]->operator[]("tid").n(), kFirstBucketTid + i) << at;
      }
      one_slice(ev, r, kCommTid, step, "allreduce");  // the gradient allreduce (finish) stays
      const Value* conv2 = one_slice(ev, r, kCompute0Tid, step, "conv2+dropout2d+pool+relu backward");
      const Value* conv1 = one_slice(ev, r, kCompute0Tid, step, "conv1+pool+relu backward");
      ASSERT_TRUE(conv2 && conv1) << at;
      const Value& fc = *b[r][0];
      EXPECT_LT(fc["ts"].n(), (*conv2)["ts"].n()) << at << "fc2+fc1 exchange starts after conv2 backward";
      EXPECT_LT(fc["ts"].n(), (*conv1)["ts"].n()) << at << "fc2+fc1 exchange starts after conv1 backward";
      EXPECT_GT(end_of(fc), end_of(*conv1)) << at << "fc2+fc1 exchange ends before conv1 backward";
      const Value* wait = one_slice(ev, r, kFirstBucketTid, step, "fc2+fc1 wait");
      ASSERT_NE(wait, nullptr) << at;
      EXPECT_GE((*wait)["ts"].n(), end_of(*conv1)) << at << "the wait begins after backward";
      EXPECT_LE(end_of(*wait), end_of(fc) + 0.001) << at << "the wait is inside the bucket's slice";
    }
    // One clock: a rank's wait for a bucket cannot end before the other rank sent it, within the
    // two ranks' recorded clock-error bounds (the ping-pong's half round trip each; under load
    // they grow, so the margin is the run's own, not a fixed one).
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 3; ++i)
        EXPECT_GE(end_of(*b[r][i]),
                  b[1 - r][i]->operator[]("ts").n() - clock_error_bound_us(ev, r) - clock_error_bound_us(ev, 1 - r) - 1)
            << "rank " << r << " bucket " << i << " step " << step;
  }
  // ./report reads the file and draws the bucket tracks as lanes.
  const Timeline t = parse_timeline_text(text, "t.json");
  EXPECT_EQ(t.thread_names.at({1, 1001}), "comm bucket 0: fc2+fc1");
  const std::string svg = timeline_lanes_svg(t, 2);
  EXPECT_NE(svg.find("rank 1 @ localhost \xc2\xb7 comm bucket 2: conv1"), std::string::npos);
  EXPECT_NE(svg.find("bucket exchange (--overlap on)"), std::string::npos);
}

TEST_F(TimelineBucketRun, OverlapOffHasNoBucketSlicesOrTracks) {
  const std::vector<Value> ev = run_gloo("off", "3", "1-2");
  ASSERT_FALSE(ev.empty());
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(thread_names(ev, r), (std::set<std::string>{"compute 0", "comm"})) << "rank " << r;
    for (long long step = 1; step <= 2; ++step) {
      EXPECT_TRUE(bucket_slices(ev, r, step).empty()) << "rank " << r << " step " << step;
      one_slice(ev, r, kCommTid, step, "allreduce");
    }
  }
  for (const Value& e : ev) EXPECT_LT(tid_of(e), kFirstBucketTid) << e["name"].s();
}

}  // namespace
