// timeline: the recorder behind src/timeline.h — per-thread lock-free record buffers, a writer
// thread that formats them into this rank's part file every 50 ms, and the start/finish
// collectives (clock sync, merge).
#include "src/timeline.h"
#include "src/safe_file.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/clock_sync.h"
#include "src/timeline_buckets.h"
#include "src/timeline_merge.h"
#include "src/timeline_record.h"
#include "src/trace_json.h"

namespace timeline_detail {
std::atomic<bool> recording{false};
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace timeline_detail

namespace {

using timeline_detail::now_ns;

constexpr int kClockRounds = 20;
constexpr size_t kBufferRecords = size_t(1) << 15;  // per thread, ~3.1 MB
constexpr auto kWriterPeriod = std::chrono::milliseconds(50);

// One thread's records: a single-producer (that thread) single-consumer (the writer) ring.
struct ThreadBuffer {
  std::vector<TimelineRecord> ring = std::vector<TimelineRecord>(kBufferRecords);
  std::atomic<uint64_t> head{0}, tail{0};
  std::atomic<uint64_t> dropped{0};
};

struct Recorder {
  // set by timeline_open
  std::string what;  // "--timeline" or "HOROVOD_TIMELINE"
  std::string path;  // FILE
  std::string part;  // this rank's file: FILE on rank 0, FILE.rank<N>.part elsewhere
  std::string host;
  int rank = 0;
  int fd = -1;
  StepRange steps;
  // set by timeline_start
  bool started = false;
  TraceContext ctx;
  std::atomic<long long> step{0};
  // buffers: allocated (and their pages touched) by timeline_start, one claimed by each thread
  // at its first record under the mutex; more are allocated only when they run out
  std::mutex buffers_mutex;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  size_t claimed = 0;
  // the writer thread and what only it touches until it is joined
  std::thread writer;
  std::mutex writer_mutex;
  std::condition_variable writer_wake;
  bool writer_stop = false;
  uint64_t written = 0;     // bytes in the part so far
  uint64_t events = 0;      // records formatted
  double writer_cpu_s = 0;  // the writer thread's CPU time (the recording's off-path cost)
  std::vector<AllreducePatch> patches;
  std::string write_error;
  std::vector<TimelineRecord> early;  // traffic before timeline_start, recorded by it
};

Recorder* g = nullptr;  // non-null once timeline_open found a FILE; never freed (no exit-time joins)
thread_local ThreadBuffer* t_buffer = nullptr;

ThreadBuffer* my_buffer() {
  if (t_buffer) return t_buffer;
  std::lock_guard<std::mutex> lock(g->buffers_mutex);
  if (g->claimed == g->buffers.size()) g->buffers.push_back(std::make_unique<ThreadBuffer>());
  return t_buffer = g->buffers[g->claimed++].get();
}

void write_part(const std::string& s) {
  write_all(g->fd, s.data(), s.size(), g->what + " " + g->part);
  g->written += s.size();
}

// Formats every record the threads have published and writes it (the writer's side of the rings).
void drain() {
  std::vector<ThreadBuffer*> bufs;
  {
    std::lock_guard<std::mutex> lock(g->buffers_mutex);
    for (auto& b : g->buffers) bufs.push_back(b.get());
  }
  std::string out;
  out.reserve(1 << 16);
  for (ThreadBuffer* b : bufs) {
    const uint64_t t = b->tail.load(std::memory_order_relaxed);
    const uint64_t h = b->head.load(std::memory_order_acquire);
    for (uint64_t i = t; i < h; ++i) {
      const TimelineRecord& r = b->ring[i % kBufferRecords];
      ++g->events;
      size_t patch_at = std::string::npos;
      append_trace_record(&out, r, g->ctx, &patch_at);
      if (patch_at != std::string::npos)
        g->patches.push_back({r.step, r.begin_ns - g->ctx.offset_ns, r.end_ns - g->ctx.offset_ns, g->written + patch_at,
                              r.on_cpu_ns, r.run_delay_ns});
    }
    b->tail.store(h, std::memory_order_release);
  }
  if (out.empty() || !g->write_error.empty()) return;
  try {
    write_part(out);
  } catch (const std::exception& e) {
    // Cut a partly written chunk so the part still ends on a whole line.
    const bool cut = ::ftruncate(g->fd, off_t(g->written)) == 0 && ::lseek(g->fd, off_t(g->written), SEEK_SET) >= 0;
    (void)cut;  // if even that fails, the warning below is all there is to do
    g->write_error = e.what();
    timeline_detail::recording.store(false);
    std::fprintf(stderr, "train: warning: %s; the timeline stops here\n", e.what());
  }
}

void writer_loop() {
  std::unique_lock<std::mutex> lock(g->writer_mutex);
  while (!g->writer_stop) {
    g->writer_wake.wait_for(lock, kWriterPeriod);
    lock.unlock();
    drain();
    lock.lock();
  }
  timespec cpu{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) g->writer_cpu_s = double(cpu.tv_sec) + cpu.tv_nsec * 1e-9;
}

std::string thread_metadata(int compute_threads, const std::vector<std::string>& bucket_layers) {
  std::string s = trace_process_metadata(g->rank, g->host);
  for (int t = 0; t < compute_threads; ++t) s += trace_thread_metadata(g->rank, t, "compute " + std::to_string(t));
  s += trace_thread_metadata(g->rank, kCommTrack, "comm");
  for (size_t b = 0; b < bucket_layers.size(); ++b)
    s += trace_thread_metadata(g->rank, bucket_track(int(b)), bucket_track_name(int(b), bucket_layers[b]));
  return s;
}

// Our allreduce algorithms' calls and steps as comm-track slices (all on the training thread).
class Observer : public AllreduceObserver {
 public:
  void on_call_begin(AllreduceAlgorithm a, size_t bytes, int64_t begin_ns) override {
    ++call_;
    algorithm_ = a;
    bytes_ = bytes;
    begin_ns_ = begin_ns;
    messages_ = 0;
    sent_ = received_ = elements_ = 0;
  }
  void on_step(const AllreduceStep& s) override {
    if (s.send_peer >= 0) {
      ++messages_;
      sent_ += s.send_bytes;
    }
    if (s.recv_peer >= 0) received_ += s.recv_bytes;
    elements_ = s.elements;
    if (!timeline_detail::recording.load(std::memory_order_relaxed)) return;
    TimelineRecord r = base(TimelineKind::kAllreduceStep, s.begin_ns, s.end_ns);
    r.algo_step = s.step;
    r.phase = s.phase;
    r.send_peer = s.send_peer;
    r.recv_peer = s.recv_peer;
    r.bytes = s.send_bytes;
    r.recv_bytes = s.recv_bytes;
    r.on_cpu_ns = s.on_cpu_ns;
    r.run_delay_ns = s.run_delay_ns;
    r.parts = s.parts;
    r.send_chunk = s.send_chunk;
    r.recv_chunk = s.recv_chunk;
    r.send_lo = s.send_lo;
    r.send_hi = s.send_hi;
    r.recv_lo = s.recv_lo;
    r.recv_hi = s.recv_hi;
    r.elements = s.elements;
    timeline_detail::push(r);
  }
  void on_call_end(int64_t end_ns) override {
    if (!timeline_detail::recording.load(std::memory_order_relaxed)) return;
    TimelineRecord r = base(TimelineKind::kAllreduceCall, begin_ns_, end_ns);
    r.bytes = bytes_;
    r.messages = messages_;
    r.call_sent = sent_;
    r.call_received = received_;
    r.elements = elements_;
    timeline_detail::push(r);
  }
  // The algorithm of the last call if it began at or after since_ns.
  bool call_since(int64_t since_ns, AllreduceAlgorithm* a) const {
    if (call_ < 0 || begin_ns_ < since_ns) return false;
    *a = algorithm_;
    return true;
  }
  int call() const { return call_; }

 private:
  TimelineRecord base(TimelineKind kind, int64_t begin, int64_t end) const {
    TimelineRecord r;
    r.kind = kind;
    r.begin_ns = begin;
    r.end_ns = end;
    r.step = timeline_detail::current_step();
    r.track = kCommTrack;
    r.call = call_;
    r.algorithm = algorithm_;
    return r;
  }
  int call_ = -1;
  AllreduceAlgorithm algorithm_ = AllreduceAlgorithm::kAuto;
  size_t bytes_ = 0;
  int64_t begin_ns_ = 0;
  int messages_ = 0;  // what this call's steps sent and received so far
  uint64_t sent_ = 0, received_ = 0, elements_ = 0;
};

Observer* g_observer = nullptr;

TimelineRecord traffic_record(const char* what, int64_t begin_ns, int64_t end_ns, size_t bytes) {
  TimelineRecord r;
  r.kind = TimelineKind::kTraffic;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  r.track = kCommTrack;
  r.phase = what;
  r.bytes = bytes;
  return r;
}

}  // namespace

namespace timeline_detail {

void push(const TimelineRecord& r) {
  ThreadBuffer* b = my_buffer();
  const uint64_t h = b->head.load(std::memory_order_relaxed);
  if (h - b->tail.load(std::memory_order_acquire) >= kBufferRecords) {
    b->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  b->ring[h % kBufferRecords] = r;
  b->head.store(h + 1, std::memory_order_release);
}

long long current_step() { return g ? g->step.load(std::memory_order_relaxed) : 0; }

void record_slice(TimelineKind kind, int64_t begin_ns, int64_t end_ns, int track) {
  TimelineRecord r;
  r.kind = kind;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  r.track = track;
  r.step = current_step();
  push(r);
}

}  // namespace timeline_detail

void timeline_open(const Options& opts, const RankInfo& info) {
  std::string what = "--timeline", path = opts.timeline;
  if (path.empty()) {
    const char* env = std::getenv("HOROVOD_TIMELINE");
    if ((env == nullptr || *env == '\0') && opts.timeline_steps_given)
      throw std::runtime_error(
          "--timeline-steps needs --timeline FILE (or HOROVOD_TIMELINE=FILE): nothing is recorded");
    if (env == nullptr || *env == '\0') return;
    what = "HOROVOD_TIMELINE";
    path = env;
  }
  g = new Recorder;
  g->what = what;
  g->path = path;
  g->rank = info.rank;
  g->host = info.hostname;
  if (g->host.empty()) {
    char h[256] = {0};
    g->host = ::gethostname(h, sizeof h - 1) == 0 ? h : "localhost";
  }
  g->steps = opts.timeline_steps;
  g->part = info.rank == 0 ? path : path + ".rank" + std::to_string(info.rank) + ".part";
  // Never through a symlink nor in a directory another user can write (src/safe_file.h).
  try {
    g->fd = create_output_file(g->part,
                               info.rank == 0 ? what + " file" : what + " part of rank " + std::to_string(info.rank),
                               0644, /*read_back=*/true);
  } catch (const SafeFileError& e) {
    throw std::runtime_error(e.what());
  }
  if (info.rank == 0) write_part("[\n");
}

bool timeline_requested() { return g != nullptr; }

void timeline_start(Communicator& comm, int compute_threads, const GradientAveraging& how,
                    const std::vector<std::string>& bucket_layers, const ClockSync* shared) {
  if (!g) return;
  const ClockSync clocks = shared ? *shared : sync_clocks(comm, kClockRounds, &now_ns);
  enable_exchange_sampling();
  g->ctx.rank = comm.rank();
  g->ctx.offset_ns = clocks.offset_ns[size_t(comm.rank())];
  g->ctx.origin_ns = clocks.origin_ns;
  g->ctx.backend = comm.backend_name();
  g->ctx.algorithm = how.adasum ? "adasum" : "auto";
  g->ctx.fp16 = how.fp16;
  g->ctx.adasum = how.adasum;
  g->ctx.world_size = comm.size();
  g->ctx.alpha_us = clocks.alpha_us;
  g->ctx.beta_us_per_byte = clocks.beta_us_per_byte;
  std::string head = thread_metadata(compute_threads, bucket_layers);
  if (comm.rank() == 0)
    head +=
        trace_clock_metadata(clocks.offset_ns, clocks.bound_ns, kClockRounds, clocks.alpha_us, clocks.beta_us_per_byte);
  write_part(head);
  for (int t = 0; t < compute_threads + 1; ++t) g->buffers.push_back(std::make_unique<ThreadBuffer>());
  g->early.push_back(traffic_record("clock sync ping-pong", clocks.begin_ns, clocks.end_ns, 0));
  for (TimelineRecord& r : g->early) {  // the start-up, step -1, recorded with step 0
    r.step = -1;
    if (g->steps.contains(0)) timeline_detail::push(r);
  }
  g->early.clear();
  g_observer = new Observer;
  timeline_detail::start_bucket_observer(bucket_layers);
  g->started = true;
  g->writer = std::thread(writer_loop);
}

void timeline_step(long long step) {
  if (!g || !g->started) return;
  g->step.store(step, std::memory_order_relaxed);
  timeline_detail::recording.store(g->write_error.empty() && g->steps.contains(step), std::memory_order_relaxed);
}

void timeline_gradient_allreduce(const CommSample& sample, size_t floats) {
  const int64_t begin = sample.begin_ns;
  if (begin == 0) return;
  TimelineRecord r;
  r.kind = TimelineKind::kGradientAllreduce;
  r.begin_ns = begin;
  r.end_ns = sample.end_ns;
  r.on_cpu_ns = sample.on_cpu_ns;
  r.run_delay_ns = sample.run_delay_ns;
  r.track = kCommTrack;
  r.step = timeline_detail::current_step();
  r.bytes = floats * (g->ctx.fp16 ? 2 : 4);
  r.call = g_observer->call_since(begin, &r.algorithm) ? g_observer->call() : -1;
  timeline_detail::push(r);
}

int64_t timeline_traffic_begin() { return g && g->write_error.empty() ? now_ns() : 0; }

void timeline_traffic(const char* what, int64_t begin, size_t bytes) {
  if (begin == 0 || !g) return;
  TimelineRecord r = traffic_record(what, begin, now_ns(), bytes);
  if (!g->started) {
    g->early.push_back(r);
    return;
  }
  if (!timeline_detail::recording.load(std::memory_order_relaxed)) return;
  r.step = timeline_detail::current_step();
  timeline_detail::push(r);
}

AllreduceObserver* timeline_allreduce_observer() { return g && g->started ? g_observer : nullptr; }

void timeline_finish(Communicator& comm) {
  if (!g || !g->started) return;
  timeline_detail::recording.store(false);
  {
    std::lock_guard<std::mutex> lock(g->writer_mutex);
    g->writer_stop = true;
  }
  g->writer_wake.notify_all();
  g->writer.join();
  drain();  // anything pushed between the writer's last pass and its stop
  g->started = false;
  const std::string mismatch =
      patch_allreduce_waits(comm, g->fd, g->write_error.empty() ? g->patches : std::vector<AllreducePatch>{});
  if (!mismatch.empty() && comm.rank() == 0)
    std::fprintf(stderr, "train: warning: timeline: allreduce wait times left out: %s\n", mismatch.c_str());
  long long dropped = 0;
  for (auto& b : g->buffers) dropped += (long long)b->dropped.load();
  char stats[256];
  std::snprintf(stats, sizeof stats,
                "{\"ph\":\"M\",\"name\":\"timeline_stats\",\"pid\":%d,\"tid\":0,\"args\":{\"events\":%llu,"
                "\"dropped_events\":%lld,\"writer_cpu_ms\":%.3f}},\n",
                g->rank, (unsigned long long)g->events, dropped, g->writer_cpu_s * 1e3);
  write_part(stats);
  gather_parts(comm, g->fd, g->written);
  if (comm.rank() == 0) write_part(trace_end(comm.size()));
  ::close(g->fd);
  if (comm.rank() != 0) ::unlink(g->part.c_str());
}
