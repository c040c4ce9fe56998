// report_input: writes a synthetic W-rank, S-step run for `make bench`'s ./report rows: a --metrics
// file and a --timeline file, both through the trainer's own writers (src/metrics.h,
// src/trace_json.h), so the bytes are what ./train writes. Each step of each rank holds what a
// ring run records: the batch read, the four forward and four backward blocks, the gradient
// allreduce (wait and transfer filled in, as the merge does), the ring call, its 2(W-1) steps with
// their flow ends, and the optimizer step; the metrics file has a step record per rank every
// --log-interval steps, a test record per 938 steps and the summary.
//
//   report_input --ranks W --steps S --metrics FILE --timeline FILE [--log-interval N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/metrics.h"
#include "src/run_summary.h"
#include "src/trace_json.h"

namespace {

struct Args {
  int ranks = 4;
  long steps = 1000;
  int log_interval = 10;
  std::string metrics, timeline;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "report_input: %s\nusage: report_input --ranks W --steps S --metrics FILE --timeline FILE "
               "[--log-interval N]\n",
               why);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + k).c_str());
    const char* v = argv[++i];
    if (k == "--ranks")
      a.ranks = std::atoi(v);
    else if (k == "--steps")
      a.steps = std::atol(v);
    else if (k == "--log-interval")
      a.log_interval = std::atoi(v);
    else if (k == "--metrics")
      a.metrics = v;
    else if (k == "--timeline")
      a.timeline = v;
    else
      usage(("unknown option " + k).c_str());
  }
  if (a.ranks < 2 || a.ranks > 64 || a.steps < 1 || a.log_interval < 1 || a.metrics.empty() || a.timeline.empty())
    usage("needs --ranks 2..64, --steps >= 1, --metrics and --timeline");
  return a;
}

// Deterministic jitter in [0, 1) from three integers.
double jitter(long a, long b, long c) {
  uint64_t x = uint64_t(a) * 0x9E3779B97F4A7C15ull ^ uint64_t(b) * 0xBF58476D1CE4E5B9ull ^ uint64_t(c) * 0x94D049BBull;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 32;
  return double(x % 1000000) / 1e6;
}

class Writer {
 public:
  explicit Writer(const std::string& path) : f_(std::fopen(path.c_str(), "w")), path_(path) {
    if (!f_) usage(("cannot write " + path).c_str());
  }
  ~Writer() {
    if (std::fclose(f_) != 0) std::fprintf(stderr, "report_input: cannot write %s\n", path_.c_str());
  }
  void put(const std::string& s) {
    if (std::fwrite(s.data(), 1, s.size(), f_) != s.size()) usage(("cannot write " + path_).c_str());
  }

 private:
  FILE* f_;
  std::string path_;
};

constexpr uint64_t kGradientBytes = 87360;

// One rank's records of one step, appended to out; t is the step's start on this rank (ns).
void rank_step(std::string* out, const TraceContext& c, int world, long step, int64_t t) {
  auto slice = [&](TimelineKind kind, int track, int64_t dur) {
    TimelineRecord r;
    r.kind = kind;
    r.track = track;
    r.step = step;
    r.begin_ns = t;
    r.end_ns = t + dur;
    t += dur;
    return r;
  };
  size_t patch_at = std::string::npos;
  append_trace_record(out, slice(TimelineKind::kBatchRead, 0, 90000), c, &patch_at);
  for (int k = int(TimelineKind::kConv1Forward); k <= int(TimelineKind::kConv1Backward); ++k)
    append_trace_record(out, slice(TimelineKind(k), 0, 150000 + int64_t(100000 * jitter(step, c.rank, k))), c,
                        &patch_at);
  // The gradient allreduce, the ring call inside it and its 2(W-1) steps.
  const int64_t wait = int64_t(200000 * jitter(step, c.rank, 99));
  const int64_t step_ns = 40000;
  TimelineRecord all = slice(TimelineKind::kGradientAllreduce, kCommTrack, wait + 2 * (world - 1) * step_ns + 2000);
  all.bytes = kGradientBytes;
  all.call = int32_t(step);
  all.algorithm = AllreduceAlgorithm::kRing;
  append_trace_record(out, all, c, &patch_at);
  if (patch_at != std::string::npos)
    out->replace(patch_at, trace_patch_size(),
                 trace_patch(TracePatch{double(wait) / 1e3, double(all.end_ns - all.begin_ns - wait) / 1e3, 0,
                                        double(wait) / 1e3}));
  TimelineRecord call = all;
  call.kind = TimelineKind::kAllreduceCall;
  call.begin_ns = all.begin_ns + 1000;
  call.end_ns = all.end_ns - 1000;
  append_trace_record(out, call, c, &patch_at);
  int64_t s = call.begin_ns + wait;
  for (int k = 0; k < 2 * (world - 1); ++k) {
    TimelineRecord r = call;
    r.kind = TimelineKind::kAllreduceStep;
    r.phase = k < world - 1 ? "reduce-scatter" : "allgather";
    r.algo_step = k;
    r.send_peer = (c.rank + 1) % world;
    r.recv_peer = (c.rank + world - 1) % world;
    r.bytes = r.recv_bytes = kGradientBytes / uint64_t(world);
    r.begin_ns = s;
    r.end_ns = s + step_ns;
    s += step_ns;
    append_trace_record(out, r, c, &patch_at);
  }
  t = all.end_ns;
  append_trace_record(out, slice(TimelineKind::kOptimizerStep, 0, 30000), c, &patch_at);
}

void write_timeline(const Args& a) {
  Writer w(a.timeline);
  w.put("[\n");
  const int64_t step_period = 3000000;  // 3 ms per step
  for (int r = 0; r < a.ranks; ++r) {
    TraceContext c;
    c.rank = r;
    c.backend = "gloo";
    c.algorithm = "ring";
    std::string head = trace_process_metadata(r, r < (a.ranks + 1) / 2 ? "hpc01" : "hpc03") +
                       trace_thread_metadata(r, 0, "compute 0") + trace_thread_metadata(r, kCommTrack, "comm");
    if (r == 0)
      head += trace_clock_metadata(std::vector<int64_t>(size_t(a.ranks), 0),
                                   std::vector<int64_t>(size_t(a.ranks), 20000), 20);
    w.put(head);
    std::string out;
    for (long step = 0; step < a.steps; ++step) {
      rank_step(&out, c, a.ranks, step, 1000000 + step * step_period + int64_t(20000 * jitter(step, r, 7)));
      if (out.size() > (1u << 20)) {
        w.put(out);
        out.clear();
      }
    }
    w.put(out);
  }
  w.put(trace_end(a.ranks));
}

void write_metrics(const Args& a) {
  Writer w(a.metrics);
  MetricsHeader h;
  h.world_size = a.ranks;
  h.backend = "gloo";
  h.algorithm = "ring";
  for (int r = 0; r < a.ranks; ++r) h.hosts.push_back(r < (a.ranks + 1) / 2 ? "hpc01" : "hpc03");
  h.baresgd = "bench";
  h.openblas = h.gloo = h.mpi = "n/a";
  Options o;
  w.put(header_record(h, o) + "\n");
  const long per_epoch = 938;
  for (long step = 0; step < a.steps; ++step) {
    if (step % a.log_interval == 0) {
      std::vector<StepRecord> ranks;
      for (int r = 0; r < a.ranks; ++r) {
        const double comm = 0.0003 + 0.0002 * jitter(step, r, 5);
        ranks.push_back({2.3 / (1 + step / 200.0), 1.0, 0.0001, 0.002, comm, 0.0021 + comm, 64 / (0.0021 + comm), r,
                         int64_t(kGradientBytes)});
      }
      const StepPosition p{int(step / per_epoch) + 1, uint64_t(step % per_epoch), uint64_t(step), 0.01 * a.ranks};
      for (const std::string& line : step_records(p, ranks)) w.put(line + "\n");
    }
    if ((step + 1) % per_epoch == 0)
      w.put(test_record(int((step + 1) / per_epoch), uint64_t(step + 1), 0.05, 0.98) + "\n");
  }
  RunSummary s = make_run_summary(a.ranks, "gloo", "ring", int(a.steps / per_epoch), uint64_t(a.steps),
                                  0.003 * double(a.steps) * a.ranks, 0.0004 * double(a.steps) * a.ranks,
                                  64.0 * double(a.steps) * a.ranks, a.steps >= per_epoch, 0.98);
  w.put(summary_record(s) + "\n");
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  write_metrics(a);
  write_timeline(a);
  return 0;
}
