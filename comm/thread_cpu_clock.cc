// thread_cpu_clock: the calling thread's on-CPU time and run_delay (see thread_cpu_clock.h).
#include "comm/thread_cpu_clock.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

namespace {

// The thread's schedstat, opened once per thread (-1: not available, e.g. no CONFIG_SCHED_INFO).
int schedstat_fd() {
  thread_local int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  return fd;
}

}  // namespace

int64_t parse_schedstat_run_delay(const char* text, size_t n) {
  int64_t field[3] = {0, 0, 0};
  int k = 0;
  bool in_number = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      if (k >= 3 || field[k] > (INT64_MAX - 9) / 10) return -1;
      field[k] = field[k] * 10 + (c - '0');
      in_number = true;
    } else if (c == ' ' || c == '\n') {
      if (in_number) ++k;
      in_number = false;
    } else {
      return -1;
    }
  }
  if (in_number) ++k;
  return k == 3 ? field[1] : -1;
}

CpuTimes thread_cpu_times() {
  CpuTimes t;
  timespec ts{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) t.on_cpu_ns = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  const int fd = schedstat_fd();
  char buf[96];
  const ssize_t n = fd >= 0 ? ::pread(fd, buf, sizeof buf, 0) : -1;
  const int64_t delay = n > 0 ? parse_schedstat_run_delay(buf, size_t(n)) : -1;
  t.run_delay_ns = delay > 0 ? delay : 0;
  return t;
}
