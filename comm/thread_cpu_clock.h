// thread_cpu_clock: how long the calling thread has run on a CPU and how long it has waited for one, so
// a slice of wall time splits into on-CPU, descheduled (runnable, waiting for a CPU: the
// kernel's run_delay) and the rest (asleep: blocked on a socket or a sleep). Read at the two ends
// of the gradient exchange when --metrics or --timeline records it (src/comm_split.h), and of
// each step of our allreduce algorithms when an observer sees them (comm/allreduce_internal.h).
#pragma once
#include <cstddef>
#include <cstdint>

struct CpuTimes {
  int64_t on_cpu_ns = 0;     // CLOCK_THREAD_CPUTIME_ID
  int64_t run_delay_ns = 0;  // /proc/thread-self/schedstat's second field; 0 when unreadable
};

// Both clocks of the calling thread now (a clock_gettime and one pread of an fd the thread keeps).
CpuTimes thread_cpu_times();

// The run_delay (second field, nanoseconds) of a schedstat line "on_cpu run_delay slices\n";
// -1 when the text is not three decimal numbers.
int64_t parse_schedstat_run_delay(const char* text, size_t n);
