// test_timeline: ./train --timeline end to end. Real 2-rank (local) and 4-rank (two sshd hosts)
// runs give one strict-JSON Chrome trace holding, per rank and per recorded step, the batch read,
// every fused layer block forward and backward on every compute track, the allreduce and the
// optimizer step, and nothing outside --timeline-steps; every rank is on rank 0's clock (rank 1's
// allreduce overlaps rank 0's; the measured offsets of ranks on this one machine, truly 0, are
// within the recorded error bounds); a run killed with SIGKILL leaves files that parse after the
// tolerant fix (strip the last ",", add "]"); bad paths and step ranges are one-line errors before
// training; HOROVOD_TIMELINE works and the flag wins; the stdout log lines are unchanged; flow
// arrows of observed algorithm steps pair up across ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "comm/comm_internal.h"
#include "src/step_range.h"
#include "src/timeline.h"
#include "src/trace_json.h"
#include "reporting/timeline_reader.h"
#include "tests/mini_json.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

namespace {

using minijson::Value;
using testutil::read_file;
using testutil::run;

const std::vector<std::string> kForward = {"conv1+pool+relu", "conv2+dropout2d+pool+relu", "fc1+relu+dropout",
                                           "fc2+log_softmax"};
constexpr int kCommTid = 1000;

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// Chrome/Perfetto's rule for a file a killed run left open: drop the last "," and close the array.
std::string tolerant_fix(std::string t, bool add_open_bracket) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (!t.empty() && t.back() == ',') t.pop_back();
  return (add_open_bracket ? "[" : "") + t + "\n]";
}

// The trace's events; a strict-JSON failure is a test failure naming the offset.
std::vector<Value> events_of(const std::string& text, const std::string& what) {
  try {
    Value v = minijson::parse(text);
    EXPECT_EQ(v.type, Value::kArray) << what;
    return v.arr;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " is not JSON: " << e.what() << "\n" << text.substr(0, 600);
    return {};
  }
}

const Value* metadata(const std::vector<Value>& ev, const std::string& name, int pid) {
  for (const Value& e : ev)
    if (e["ph"].s() == "M" && e["name"].s() == name && int(e["pid"].n()) == pid) return &e;
  return nullptr;
}

// Per (pid, tid, step, name): how many 'X' slices.
using SliceKey = std::tuple<int, int, long long, std::string>;
std::map<SliceKey, int> count_slices(const std::vector<Value>& ev) {
  std::map<SliceKey, int> c;
  for (const Value& e : ev)
    if (e["ph"].s() == "X")
      ++c[{int(e["pid"].n()), int(e["tid"].n()), (long long)e["args"]["step"].n(), e["name"].s()}];
  return c;
}

// Per rank and step: the gradient allreduce slice.
std::map<std::pair<int, long long>, const Value*> allreduces(const std::vector<Value>& ev) {
  std::map<std::pair<int, long long>, const Value*> m;
  for (const Value& e : ev)
    if (e["ph"].s() == "X" && e["name"].s() == "allreduce")
      m[{int(e["pid"].n()), (long long)e["args"]["step"].n()}] = &e;
  return m;
}

// What every finished multi-rank timeline must hold; hosts[r] is rank r's host name. Training
// steps first..last each hold their slices; no slice lies outside first..range_last (default last).
void check_training_trace(const std::vector<Value>& ev, const std::vector<std::string>& hosts, int threads,
                          long long first, long long last, const std::string& backend, long long range_last = -1) {
  if (range_last < 0) range_last = last;
  const int world = int(hosts.size());
  ASSERT_FALSE(ev.empty());
  // tracks
  for (int r = 0; r < world; ++r) {
    const Value* pn = metadata(ev, "process_name", r);
    ASSERT_NE(pn, nullptr) << "rank " << r;
    EXPECT_EQ((*pn)["args"]["name"].s(), "rank " + std::to_string(r) + " @ " + hosts[r]);
    ASSERT_NE(metadata(ev, "process_sort_index", r), nullptr);
    std::set<std::string> threads_named;
    for (const Value& e : ev)
      if (e["ph"].s() == "M" && e["name"].s() == "thread_name" && int(e["pid"].n()) == r)
        threads_named.insert(e["args"]["name"].s());
    std::set<std::string> want = {"comm"};
    for (int t = 0; t < threads; ++t) want.insert("compute " + std::to_string(t));
    EXPECT_EQ(threads_named, want) << "rank " << r;
  }
  // one clock: offsets and bounds for every rank; on one machine the true offset is 0
  const Value* clock = metadata(ev, "clock_sync", 0);
  ASSERT_NE(clock, nullptr);
  const Value& off = (*clock)["args"]["clock_offsets_us"];
  const Value& bound = (*clock)["args"]["clock_error_bound_us"];
  ASSERT_EQ(off.arr.size(), size_t(world));
  ASSERT_EQ(bound.arr.size(), size_t(world));
  EXPECT_EQ(off.arr[0].n(), 0);
  for (int r = 1; r < world; ++r) {
    EXPECT_GT(bound.arr[r].n(), 0) << "rank " << r;
    EXPECT_LE(std::fabs(off.arr[r].n()), bound.arr[r].n() + 0.001)
        << "rank " << r << ": the offset measured between two processes on one clock exceeds its bound";
  }
  // nothing outside the recorded steps
  for (const Value& e : ev)
    if (e["ph"].s() == "X") {
      const long long s = (long long)e["args"]["step"].n();
      if (s == -1 && first == 0) continue;  // the start-up traffic, recorded with step 0
      EXPECT_TRUE(s >= first && s <= range_last)
          << e["name"].s() << " of step " << s << " outside " << first << "-" << range_last;
    }
  // the expected slices of every recorded step on every rank
  auto c = count_slices(ev);
  for (int r = 0; r < world; ++r)
    for (long long s = first; s <= last; ++s) {
      const std::string at = "rank " + std::to_string(r) + " step " + std::to_string(s) + ": ";
      EXPECT_EQ((c[{r, 1, s, "batch read"}]), 1) << at << "batch read";
      EXPECT_EQ((c[{r, 1, s, "optimizer step"}]), 1) << at << "optimizer step";
      EXPECT_EQ((c[{r, kCommTid, s, "allreduce"}]), 1) << at << "allreduce";
      for (int t = 0; t < threads; ++t)
        for (const std::string& layer : kForward) {
          EXPECT_EQ((c[{r, t + 1, s, layer}]), 1) << at << layer << " on compute " << t;
          EXPECT_EQ((c[{r, t + 1, s, layer + " backward"}]), 1) << at << layer << " backward on compute " << t;
        }
    }
  // the allreduce's args; the wait is measured from the last rank to arrive, which waits 0
  auto ar = allreduces(ev);
  for (long long s = first; s <= last; ++s) {
    double min_wait = 1e18;
    for (int r = 0; r < world; ++r) {
      const Value* a = ar[{r, s}];
      ASSERT_NE(a, nullptr) << "rank " << r << " step " << s;
      const Value& args = (*a)["args"];
      EXPECT_EQ(args["bytes"].n(), 21840 * 4);
      EXPECT_EQ(args["backend"].s(), backend);
      EXPECT_EQ(args["algorithm"].s(), "auto");
      EXPECT_EQ(args["fp16"].type, Value::kBool);
      EXPECT_EQ(args["adasum"].type, Value::kBool);
      ASSERT_EQ(args["wait_us"].type, Value::kNumber) << "rank " << r << " step " << s;
      ASSERT_EQ(args["transfer_us"].type, Value::kNumber);
      EXPECT_GE(args["wait_us"].n(), 0);
      ASSERT_EQ(args["descheduled_us"].type, Value::kNumber);
      EXPECT_NEAR(args["wait_us"].n() + args["transfer_us"].n() + args["descheduled_us"].n(), (*a)["dur"].n(), 0.003);
      min_wait = std::min(min_wait, args["wait_us"].n());
    }
    EXPECT_EQ(min_wait, 0) << "step " << s << ": no rank was the last to arrive";
    // On one clock rank 1's allreduce overlaps rank 0's (neither can end before the other began),
    // within the clock's error bound.
    const Value &a0 = *ar[{0, s}], &a1 = *ar[{1, s}];
    const double b0 = a0["ts"].n(), e0 = b0 + a0["dur"].n(), b1 = a1["ts"].n(), e1 = b1 + a1["dur"].n();
    const double tol = bound.arr[1].n();
    EXPECT_TRUE(b1 <= e0 + tol && b0 <= e1 + tol)
        << "step " << s << ": rank 0 [" << b0 << ", " << e0 << "] rank 1 [" << b1 << ", " << e1 << "] bound " << tol;
  }
}

std::vector<std::string> part_files(const std::string& file) {
  std::vector<std::string> out;
  const std::string dir = file.substr(0, file.rfind('/')), base = file.substr(file.rfind('/') + 1);
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(base + ".rank", 0) == 0) out.push_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

// The last line of stderr (usage errors print the usage first).
std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string stdout_lines_without_tags(const std::string& out) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < out.size()) {
    size_t nl = out.find('\n', at);
    if (nl == std::string::npos) nl = out.size();
    lines.push_back(out.substr(at, nl - at));
    at = nl + 1;
  }
  std::sort(lines.begin(), lines.end());  // ranks interleave differently from run to run
  std::string s;
  for (auto& l : lines) s += l + "\n";
  return s;
}

class TimelineRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("timeline");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
  const std::string train = testutil::train_bin();
  const std::string launch = testutil::launch_bin();
};

TEST(TimelineSteps, ParsesRangesStrictly) {
  StepRange r;
  ASSERT_TRUE(parse_step_range("5-20", &r));
  EXPECT_EQ(r.first, 5);
  EXPECT_EQ(r.last, 20);
  EXPECT_TRUE(r.contains(5) && r.contains(20) && !r.contains(4) && !r.contains(21));
  ASSERT_TRUE(parse_step_range("7", &r));
  EXPECT_TRUE(r.first == 7 && r.last == 7);
  ASSERT_TRUE(parse_step_range("0-0", &r));
  EXPECT_TRUE(StepRange{}.contains(0) && StepRange{}.contains(1LL << 40));
  for (const char* bad :
       {"", "-", "5-", "-5", "20-5", "a", "1-2-3", " 5", "5 ", "+5", "5-+6", "1.5", "99999999999999999999", "0x10"})
    EXPECT_FALSE(parse_step_range(bad, &r)) << "'" << bad << "'";
}

TEST(TimelineTrace, FormatsLinesAsJson) {
  std::string s;
  append_us(&s, -1250);
  s += " ";
  append_us(&s, 12000);
  s += " ";
  append_us(&s, 7);
  EXPECT_EQ(s, "-1.250 12.000 0.007");
  EXPECT_EQ(trace_patch(TracePatch{1.5, -2, 3, 1e11}).size(), trace_patch_size());
  EXPECT_EQ(trace_patch(TracePatch{NAN, NAN, NAN, NAN}).size(), trace_patch_size());
  EXPECT_EQ(trace_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_NE(trace_flow_id(3, 1, 0, 1), trace_flow_id(3, 1, 1, 0));
  EXPECT_LT(trace_flow_id(123456, 7, 3, 2), uint64_t(1) << 53);
  // one line of each kind parses, and the patch region replaced in place keeps it JSON
  TraceContext c;
  c.rank = 1;
  c.offset_ns = 500;
  c.origin_ns = 1000;
  c.backend = "gloo";
  c.algorithm = "auto";
  std::string out = "[";
  size_t patch = std::string::npos;
  TimelineRecord r;
  r.begin_ns = 3000;
  r.end_ns = 5500;
  r.step = 4;
  r.kind = TimelineKind::kGradientAllreduce;
  r.track = kCommTrack;
  r.call = -1;
  append_trace_record(&out, r, c, &patch);
  ASSERT_NE(patch, std::string::npos);
  out.replace(patch, trace_patch_size(), trace_patch(TracePatch{0.25, 2.25, 0.5, 1}));
  r.kind = TimelineKind::kAllreduceStep;
  r.algorithm = AllreduceAlgorithm::kRing;
  r.phase = "reduce-scatter";
  r.algo_step = 2;
  r.send_peer = 3;
  r.recv_peer = 0;
  c.world_size = 4;
  append_trace_record(&out, r, c, &patch);
  out += trace_process_metadata(1, "h\"1") + trace_end(2);
  std::vector<Value> ev = events_of(out, "formatted lines");
  ASSERT_EQ(ev.size(), 7u);         // allreduce, step slice, 's', 'f', process name + sort index, end
  EXPECT_EQ(ev[0]["ts"].n(), 1.5);  // 3000 - 500 - 1000 ns
  EXPECT_EQ(ev[0]["dur"].n(), 2.5);
  EXPECT_EQ(ev[0]["args"]["wait_us"].n(), 0.25);
  EXPECT_EQ(ev[1]["name"].s(), "ring reduce-scatter 3/3");
  EXPECT_EQ(ev[1]["args"]["send_to"].n(), 3);
  EXPECT_EQ(ev[1]["args"]["recv_from"].n(), 0);
  EXPECT_EQ(ev[2]["ph"].s(), "s");
  EXPECT_EQ(ev[2]["id"].n(), double(trace_flow_id(-1, 2, 1, 3)));
  EXPECT_EQ(ev[3]["ph"].s(), "f");
  EXPECT_EQ(ev[3]["bp"].s(), "e");
  EXPECT_EQ(ev[3]["id"].n(), double(trace_flow_id(-1, 2, 0, 1)));
  EXPECT_EQ(ev[4]["args"]["name"].s(), "rank 1 @ h\"1");
}

// A step that is not one of our algorithms' (a test's own exchange, or a trace written without
// the world size, as bench/report_input.cc's) is named by its peer on its own lane, but both ends
// of each message carry the same rank-independent flow name, so every send pairs with its
// receive: 3 ranks x 4 steps in a ring give 12 arrows and no end left waiting.
TEST(TimelineTrace, FlowEndsOfStepsNotOursPairAcrossRanks) {
  const int world = 3, steps = 4;
  std::string out = "[\n";
  size_t patch = std::string::npos;
  for (int rank = 0; rank < world; ++rank) {
    TraceContext c;
    c.rank = rank;
    c.backend = "gloo";
    c.algorithm = "ring";
    for (int k = 0; k < steps; ++k) {
      TimelineRecord r;
      r.kind = TimelineKind::kAllreduceStep;
      r.track = kCommTrack;
      r.algorithm = AllreduceAlgorithm::kRing;
      r.phase = k < 2 ? "reduce-scatter" : "allgather";
      r.call = 5;
      r.step = 1;
      r.algo_step = k;
      r.send_peer = (rank + 1) % world;
      r.recv_peer = (rank + world - 1) % world;
      r.bytes = r.recv_bytes = 400;
      r.begin_ns = 1000 * (k + 1);
      r.end_ns = r.begin_ns + 900;
      append_trace_record(&out, r, c, &patch);
    }
  }
  out += trace_end(world);
  const std::vector<Value> ev = events_of(out, "exchange");
  EXPECT_EQ(ev[0]["name"].s(), "ring reduce-scatter 0 -> rank 1");  // the slice names its peer
  EXPECT_EQ(ev[1]["name"].s(),
            "ring reduce-scatter 0: chunk " + std::to_string(int(ev[1]["args"]["chunk"].n())) + " (400 B)");
  const Timeline t = parse_timeline_text(out, "exchange.json");
  ASSERT_EQ(t.flows.size(), size_t(world * steps));
  for (const TraceFlow& f : t.flows) {
    EXPECT_EQ(f.to_pid, (f.from_pid + 1) % world) << f.name;
    EXPECT_LT(f.from_ts_us, f.to_ts_us) << f.name;
  }
}

// The hot path in this process (single backend): 20000 slices, each two clock reads and a push
// into this thread's ring, all reach the file and none is dropped. (What recording costs is
// measured by `make bench`'s timeline row, not here.)
TEST(TimelineRecording, EverySliceOfABurstReachesTheFile) {
  const std::string dir = testutil::make_temp_dir("tlcost");
  Options o;
  o.timeline = dir + "/cost.json";
  RankInfo info;
  info.hostname = "testhost";
  timeline_open(o, info);
  auto comm = make_single_communicator(info);
  timeline_start(*comm, 1, GradientAveraging{});
  timeline_step(0);
  const int n = 20000;  // below one ring's capacity: the writer is not needed to keep up
  for (int i = 0; i < n; ++i) {
    const int64_t t = timeline_begin();
    timeline_end(TimelineKind::kOptimizerStep, t);
  }
  timeline_finish(*comm);
  std::vector<Value> ev = events_of(read_file(o.timeline), o.timeline);
  EXPECT_EQ((count_slices(ev)[{0, 1, 0, "optimizer step"}]), n);
  const Value* stats = metadata(ev, "timeline_stats", 0);
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ((*stats)["args"]["dropped_events"].n(), 0);
  // Every recorded event is in the file: the burst and the start-up's own (the clock sync's
  // ping-pong on the comm track, step -1).
  int slices = 0;
  for (const auto& kv : count_slices(ev)) slices += kv.second;
  EXPECT_GE(slices, n);
  EXPECT_EQ((*stats)["args"]["events"].n(), slices);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_F(TimelineRun, TwoRanksRecordEveryStepOnOneClockAndLeaveStdoutAlone) {
  const std::string file = dir + "/t.json";
  const std::string args = " --max-steps 7 --threads 2 --log-interval 1";
  auto r = run(launch + " -np 2 --gloo " + train + args + " --timeline " + file + " --timeline-steps 2-4", 300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string text = read_file(file);
  ASSERT_GE(text.size(), 4u);
  EXPECT_EQ(text.substr(text.size() - 4), "}\n]\n") << "not closed";
  check_training_trace(events_of(text, file), {"localhost", "localhost"}, 2, 2, 4, "gloo");
  EXPECT_TRUE(part_files(file).empty()) << "part files left: " << part_files(file)[0];
  // the example's log lines are the same as without --timeline
  auto plain = run(launch + " -np 2 --gloo " + train + args, 300);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(stdout_lines_without_tags(r.out), stdout_lines_without_tags(plain.out));
}

TEST_F(TimelineRun, HorovodTimelineRecordsTheTestPassAndCheckpointOfTheSteps) {
  // HOROVOD_TIMELINE, one epoch (469 steps of 2 ranks x 64), the last 9 steps: the test pass and
  // the epoch-end checkpoint count as step 469.
  const std::string file = dir + "/env.json";
  auto r = run("HOROVOD_TIMELINE=" + file + " " + launch + " -np 2 --gloo " + train +
                   " --epochs 1 --timeline-steps 460-469 --checkpoint-dir " + dir + "/ckpt",
               600);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::vector<Value> ev = events_of(read_file(file), file);
  check_training_trace(ev, {"localhost", "localhost"}, 1, 460, 468, "gloo", 469);
  auto c = count_slices(ev);
  EXPECT_EQ((c[{0, 1, 469, "test pass"}]), 1);
  EXPECT_EQ((c[{1, 1, 469, "test pass"}]), 1);
  EXPECT_EQ((c[{0, 1, 469, "checkpoint write"}]), 1);
  EXPECT_GE((c[{1, 1, 469, "conv1+pool+relu"}]), 10) << "the test pass's forward blocks";
  EXPECT_EQ((c[{1, 1, 469, "conv1+pool+relu backward"}]), 0);
}

TEST_F(TimelineRun, FlagWinsOverHorovodTimeline) {
  const std::string flag = dir + "/flag.json", env = dir + "/env.json";
  auto r = run("HOROVOD_TIMELINE=" + env + " " + train + " --max-steps 2 --timeline " + flag, 120);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(exists(env));
  std::vector<Value> ev = events_of(read_file(flag), flag);
  auto c = count_slices(ev);
  EXPECT_EQ((c[{0, 1, 1, "optimizer step"}]), 1);
  EXPECT_EQ((c[{0, kCommTid, 1, "allreduce"}]), 0) << "one rank has no allreduce";
}

// A child in its own process group with its output in files.
pid_t spawn(const std::string& cmd, const std::string& out) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// Pids of processes whose command line holds text.
std::vector<pid_t> procs_with(const std::string& text) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == ::getpid()) continue;
    std::string cmd = read_file("/proc/" + std::string(e->d_name) + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(text) != std::string::npos) out.push_back(pid_t(pid));
  }
  ::closedir(d);
  return out;
}

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

TEST_F(TimelineRun, KilledMidEpochLeavesFilesThatParseAfterTheTolerantFix) {
  const std::string file = dir + "/killed.json";
  const pid_t job = spawn(launch + " -np 2 --gloo " + train + " --epochs 1 --timeline " + file, dir + "/out");
  // The parts grow while training runs (streamed, flushed every 50 ms): wait for ~20 steps.
  bool grew = false;
  for (int i = 0; i < 1200 && !grew; ++i) {
    grew = count_lines(read_file(file)) > 400 && count_lines(read_file(file + ".rank1.part")) > 400;
    if (!grew) ::usleep(25 * 1000);
  }
  for (pid_t p : procs_with(file)) ::kill(p, SIGKILL);
  ::kill(-job, SIGKILL);
  int st = 0;
  ::waitpid(job, &st, 0);
  ASSERT_TRUE(grew) << "the timeline did not grow while the job ran:\n" << read_file(dir + "/out");
  EXPECT_EQ(read_file(dir + "/out").find("Test set"), std::string::npos) << "the epoch ended before the kill";
  for (int i = 0; i < 1500 && !procs_with(file).empty(); ++i) ::usleep(20 * 1000);
  ASSERT_TRUE(procs_with(file).empty()) << "the killed job's processes are still there";

  const std::string text = read_file(file);
  EXPECT_NE(text.substr(text.size() - 2), "]\n") << "the killed run closed the array";
  std::vector<Value> ev0 = events_of(tolerant_fix(text, false), file + " after the tolerant fix");
  std::vector<Value> ev1 = events_of(tolerant_fix(read_file(file + ".rank1.part"), true), "rank 1's part");
  auto c0 = count_slices(ev0);
  auto c1 = count_slices(ev1);
  EXPECT_EQ((c0[{0, 1, 5, "batch read"}]), 1);
  EXPECT_EQ((c1[{1, 1, 5, "fc2+log_softmax backward"}]), 1);
  EXPECT_NE(metadata(ev0, "clock_sync", 0), nullptr);
  ASSERT_NE(metadata(ev1, "process_name", 1), nullptr);
}

TEST_F(TimelineRun, UnwritablePathsAreOneLineErrorsBeforeTraining) {
  const std::string bad = dir + "/no/such/dir/t.json";
  auto r = run(train + " --max-steps 1 --timeline " + bad, 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "train: error: " + bad + ": --timeline file cannot be created: No such file or directory\n");
  EXPECT_EQ(r.out, "");
  auto e = run("HOROVOD_TIMELINE=" + bad + " " + train + " --max-steps 1", 60);
  EXPECT_EQ(e.status, 1);
  EXPECT_EQ(e.err, "train: error: " + bad + ": HOROVOD_TIMELINE file cannot be created: No such file or directory\n");
  // Rank 1 cannot create its part (a directory is in the way): its error, before any training.
  const std::string file = dir + "/t.json";
  ASSERT_EQ(::mkdir((file + ".rank1.part").c_str(), 0755), 0);
  auto p = run(launch + " -np 2 --gloo " + train + " --max-steps 1 --timeline " + file, 120);
  EXPECT_NE(p.status, 0);
  EXPECT_NE(p.err.find("train: error: " + file +
                       ".rank1.part: --timeline part of rank 1 cannot be created: Is a "
                       "directory\n"),
            std::string::npos)
      << p.err;
  EXPECT_EQ(p.out.find("Train Epoch"), std::string::npos) << p.out;
}

TEST_F(TimelineRun, MalformedStepRangesAreUsageErrors) {
  for (const std::string bad : {"5-", "x", "20-5", "1-2-3", "-3", "", "2-x"}) {
    auto r = run(train + " --max-steps 1 --timeline " + dir + "/t.json --timeline-steps '" + bad + "'", 60);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_EQ(last_line(r.err), "train: error: argument --timeline-steps: invalid step range '" + bad +
                                    "' (expected A-B or A: 0-based optimizer steps, A <= B)");
    EXPECT_FALSE(exists(dir + "/t.json")) << bad;
  }
}

// Flow arrows of observed algorithm steps: 's' at each send, 'f' bound to the receiving step
// slice on the peer, with the same id; one pair per message.
void check_flows(const std::vector<Value>& ev, int world, int min_pairs, const std::string& alg) {
  std::map<long long, std::vector<const Value*>> starts, finishes;
  for (const Value& e : ev) {
    if (e["ph"].s() == "s") starts[(long long)e["id"].n()].push_back(&e);
    if (e["ph"].s() == "f") finishes[(long long)e["id"].n()].push_back(&e);
  }
  EXPECT_GE(int(starts.size()), min_pairs);
  std::set<int> senders;
  for (auto& [id, s] : starts) {
    ASSERT_EQ(s.size(), 1u) << "flow id " << id << " starts twice";
    ASSERT_EQ(finishes[id].size(), 1u) << "flow id " << id << " has no (or two) receiving ends";
    const Value& f = *finishes[id][0];
    const int from = int((*s[0])["pid"].n()), to = int(f["pid"].n());
    EXPECT_NE(from, to);
    EXPECT_EQ(f["bp"].s(), "e");
    senders.insert(from);
    // the 'f' lies inside a step slice of the receiver that names the sender
    bool bound = false;
    for (const Value& e : ev)
      if (e["ph"].s() == "X" && int(e["pid"].n()) == to && int(e["tid"].n()) == kCommTid &&
          e["name"].s().rfind(alg + " ", 0) == 0 && int(e["args"]["recv_from"].n()) == from && e.has("args") &&
          e["args"].has("algo_step") && f["ts"].n() >= e["ts"].n() && f["ts"].n() <= e["ts"].n() + e["dur"].n())
        bound = true;
    EXPECT_TRUE(bound) << "flow " << id << " from rank " << from << " binds to no step slice of rank " << to;
  }
  EXPECT_EQ(int(senders.size()), world);
  for (auto& [id, f] : finishes) EXPECT_EQ(starts.count(id), 1u) << "flow id " << id << " ends without a start";
}

TEST_F(TimelineRun, ObservedStepsGiveFlowArrowsThatPairUpAcrossRanks) {
  // tests/tool_timeline_exchange: 4 ranks, 3 calls of a 2-step pairwise exchange reported
  // through timeline_allreduce_observer(), as our allreduce algorithms report theirs.
  const std::string file = dir + "/x.json";
  auto r = run(launch + " -np 4 --gloo " + testutil::tools_dir() + "/tool_timeline_exchange " + file + " 3", 120);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::vector<Value> ev = events_of(read_file(file), file);
  check_flows(ev, 4, 3 * 2 * 4, "halving-doubling");
  auto c = count_slices(ev);
  EXPECT_EQ((c[{2, kCommTid, 1, "halving-doubling exchange 1 -> rank 0"}]), 1);
  EXPECT_EQ((c[{2, kCommTid, 1, "halving-doubling allreduce"}]), 1);
}

TEST_F(TimelineRun, RingAllreduceStepsShowAsFlowArrowsBetweenRanks) {
  auto help = run(train + " --help", 30);
  ASSERT_EQ(help.status, 0) << help.err;
  ASSERT_NE(help.out.find("--allreduce"), std::string::npos) << help.out;
  const std::string file = dir + "/ring.json";
  auto r = run(launch + " -np 4 --gloo " + train + " --allreduce ring --max-steps 3 --timeline " + file, 300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::vector<Value> ev = events_of(read_file(file), file);
  // ring on 4 ranks: 3 reduce-scatter + 3 allgather steps per call, each rank sending one message
  check_flows(ev, 4, 3 * 6 * 4, "ring");
  auto ar = allreduces(ev);
  ASSERT_NE((ar[{0, 1}]), nullptr);
  EXPECT_EQ((*ar[{0, 1}])["args"]["algorithm"].s(), "ring");
}

// Two sshd "hosts" on loopback (tests/test_hosts.sh), as in test_distributed's TwoHosts.
class TimelineTwoHosts : public TestHostsFixture<> {
 protected:
  void SetUp() override {
    TestHostsFixture::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("timeline4");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
};

TEST_F(TimelineTwoHosts, FourRanksOnTwoHostsMergeIntoOneFileOnOneClock) {
  const std::string file = dir + "/four.json";
  auto r = run("BARESGD_SSH_CONFIG=" + cfg() + " " + testutil::launch_bin() + " -np 4 --gloo -H hpc01:2,hpc03:2 " +
                   testutil::train_bin() + " --max-steps 5 --timeline " + file + " --timeline-steps 1-3",
               600);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  check_training_trace(events_of(read_file(file), file), {"hpc01", "hpc01", "hpc03", "hpc03"}, 1, 1, 3, "gloo");
  EXPECT_TRUE(part_files(file).empty());
}

}  // namespace
