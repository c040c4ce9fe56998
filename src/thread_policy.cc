// thread_policy: the compute threads per rank (decide_thread_policy) and the CPU count it starts from.
#include "src/thread_policy.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

int cores_per_rank(int cpus, int local_size) { return std::max(1, cpus / std::max(1, local_size)); }

namespace {

// OpenBLAS's reading of a thread-count variable: atoi, and 0 for unset or not positive.
int blas_env_count(const char* v) { return v ? std::max(0, std::atoi(v)) : 0; }

}  // namespace

ThreadPolicy decide_thread_policy(const ThreadInputs& in) {
  ThreadPolicy p;
  const int cpus = std::max(1, in.cpus);
  if (in.threads_flag > 0) {
    p.compute_threads = in.threads_flag;
  } else if (in.openblas_num_threads) {
    int n = blas_env_count(in.openblas_num_threads);
    if (n == 0) n = blas_env_count(in.goto_num_threads);
    if (n == 0) n = blas_env_count(in.omp_num_threads);
    p.compute_threads = n == 0 ? cpus : std::min(n, cpus);
  } else {
    p.compute_threads = cores_per_rank(cpus, in.local_size);
  }
  p.spin_while_waiting = long(std::max(1, in.local_size)) * p.compute_threads <= cpus;
  return p;
}

int affinity_cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}
