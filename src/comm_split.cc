// comm_split: wait, transfer and descheduled from one exchange's sample (see comm_split.h).
#include "src/comm_split.h"

#include <algorithm>
#include <atomic>
#include <chrono>

CommSplit split_comm(const CommSample& s, int64_t latest_begin_ns) {
  CommSplit c;
  c.wall_ns = std::max<int64_t>(0, s.end_ns - s.begin_ns);
  c.wait_ns = std::clamp<int64_t>(latest_begin_ns - s.begin_ns, 0, c.wall_ns);
  const int64_t after = c.wall_ns - c.wait_ns, run_delay = std::clamp<int64_t>(s.run_delay_ns, 0, c.wall_ns);
  c.descheduled_ns = c.wall_ns > 0 ? int64_t(double(run_delay) * double(after) / double(c.wall_ns)) : 0;
  c.run_delay_ns = run_delay;
  c.transfer_ns = c.wall_ns - c.wait_ns - c.descheduled_ns;
  c.on_cpu_ns = std::clamp<int64_t>(s.on_cpu_ns, 0, c.wall_ns);
  return c;
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
