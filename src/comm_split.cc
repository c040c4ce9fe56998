// comm_split: wait, transfer and descheduled from one exchange's sample (see comm_split.h).
#include "src/comm_split.h"

#include <algorithm>
#include <atomic>
#include <chrono>

int64_t stall_until_ns(const CommSample& s, int64_t latest_begin_ns, int64_t until_ns) {
  const int64_t wall = s.end_ns - s.begin_ns;
  const int64_t span = std::min(until_ns, s.end_ns) - std::max(latest_begin_ns, s.begin_ns);
  if (wall <= 0 || span <= 0) return 0;
  const int64_t run_delay = std::clamp<int64_t>(s.run_delay_ns, 0, wall);
  return int64_t(double(run_delay) * double(span) / double(wall));
}

CommSplit split_comm(const CommSample& s, int64_t latest_begin_ns, int64_t stall_ns) {
  CommSplit c;
  c.wall_ns = std::max<int64_t>(0, s.end_ns - s.begin_ns);
  c.wait_ns = std::clamp<int64_t>(latest_begin_ns - s.begin_ns, 0, c.wall_ns);
  c.descheduled_ns = std::clamp<int64_t>(stall_ns, 0, c.wall_ns - c.wait_ns);
  c.transfer_ns = c.wall_ns - c.wait_ns - c.descheduled_ns;
  c.on_cpu_ns = std::clamp<int64_t>(s.on_cpu_ns, 0, c.wall_ns);
  c.run_delay_ns = std::clamp<int64_t>(s.run_delay_ns, 0, c.wall_ns);
  return c;
}

std::vector<CommSplit> split_exchange(const std::vector<CommSample>& ranks) {
  int64_t latest = ranks.empty() ? 0 : ranks[0].begin_ns;
  for (const CommSample& s : ranks) latest = std::max(latest, s.begin_ns);
  std::vector<CommSplit> out;
  for (const CommSample& mine : ranks) {
    int64_t stall = 0;  // the longest stall of any rank between the last arrival and this rank's end
    for (const CommSample& other : ranks) stall = std::max(stall, stall_until_ns(other, latest, mine.end_ns));
    out.push_back(split_comm(mine, latest, stall));
  }
  return out;
}

namespace {

std::atomic<bool> g_enabled{false};
CommSample g_last;  // the Trainer's thread only
CpuTimes g_cpu_begin;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void enable_exchange_sampling() { g_enabled.store(true, std::memory_order_relaxed); }
bool exchange_sampling_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void exchange_sample_begin() {
  if (!exchange_sampling_enabled()) return;
  g_cpu_begin = thread_cpu_times();
  g_last = CommSample{};
  g_last.begin_ns = steady_ns();
}

void exchange_sample_end() {
  if (!exchange_sampling_enabled()) return;
  g_last.end_ns = steady_ns();
  const CpuTimes now = thread_cpu_times();
  g_last.on_cpu_ns = now.on_cpu_ns - g_cpu_begin.on_cpu_ns;
  g_last.run_delay_ns = now.run_delay_ns - g_cpu_begin.run_delay_ns;
}

const CommSample& last_exchange_sample() { return g_last; }
