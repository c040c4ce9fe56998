// thread_policy: the compute threads per rank (decide_thread_policy), the rule that gave them,
// whether the rank's starter bound it, and the CPU counts it starts from.
#include "src/thread_policy.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

int cores_per_rank(int cpus, int local_size) { return std::max(1, cpus / std::max(1, local_size)); }

namespace {

// OpenBLAS's reading of a thread-count variable: atoi, and 0 for unset or not positive.
int leading_count(const char* v) { return v ? std::max(0, std::atoi(v)) : 0; }

// SLURM_CPUS_PER_TASK as Slurm writes it: digits only, >= 1; 0 otherwise.
int whole_count(const char* v) {
  if (!v || !*v || std::strlen(v) > 6 || std::strspn(v, "0123456789") != std::strlen(v)) return 0;
  return std::atoi(v);
}

// Rule 4's OPENBLAS_NUM_THREADS: its leading integer, else GOTO_NUM_THREADS, else every CPU.
int openblas_count(const ThreadInputs& in, int cpus) {
  int n = leading_count(in.openblas_num_threads);
  if (n == 0) n = leading_count(in.goto_num_threads);
  return n == 0 ? cpus : std::min(n, cpus);
}

void choose(ThreadPolicy* p, ThreadRule rule, int threads) {
  p->rule = rule;
  p->compute_threads = std::max(1, threads);
}

}  // namespace

ThreadPolicy decide_thread_policy(const ThreadInputs& in) {
  ThreadPolicy p;
  const int cpus = std::max(1, in.cpus);
  const int online = std::max(cpus, in.online_cpus);
  const bool bound = in.bound_per_task && cpus < online;  // a whole-host mask binds nothing
  const int share = cores_per_rank(cpus, in.local_size);
  if (in.threads_flag > 0) {
    choose(&p, ThreadRule::kThreadsFlag, in.threads_flag);
  } else if (bound) {
    choose(&p, ThreadRule::kBoundCpus, cpus);
  } else if (const int n = whole_count(in.slurm_cpus_per_task); n > 0) {
    choose(&p, ThreadRule::kSlurmCpusPerTask, std::min(n, share));
  } else if (const int m = leading_count(in.omp_num_threads); m > 0) {
    choose(&p, ThreadRule::kOmpNumThreads, std::min(m, cpus));
  } else if (in.openblas_num_threads) {
    choose(&p, ThreadRule::kOpenblasNumThreads, openblas_count(in, cpus));
  } else {
    choose(&p, ThreadRule::kHostShare, share);
  }
  p.host_cpus = bound ? online : cpus;
  p.spin_while_waiting = long(std::max(1, in.local_size)) * p.compute_threads <= p.host_cpus;
  return p;
}

const char* thread_rule_name(ThreadRule rule) {
  switch (rule) {
    case ThreadRule::kThreadsFlag:
      return "--threads";
    case ThreadRule::kBoundCpus:
      return "bound-cpus";
    case ThreadRule::kSlurmCpusPerTask:
      return "SLURM_CPUS_PER_TASK";
    case ThreadRule::kOmpNumThreads:
      return "OMP_NUM_THREADS";
    case ThreadRule::kOpenblasNumThreads:
      return "OPENBLAS_NUM_THREADS";
    case ThreadRule::kHostShare:
      return "cpus/local-ranks";
  }
  return "?";
}

bool started_bound_per_task(const char* source, const char* ompi_bound_at_launch, const char* slurm_cpu_bind_type) {
  if (!source) return false;
  if (std::strcmp(source, "ompi") == 0) return ompi_bound_at_launch && std::strcmp(ompi_bound_at_launch, "1") == 0;
  if (std::strcmp(source, "slurm") == 0)
    return slurm_cpu_bind_type && *slurm_cpu_bind_type && std::strcmp(slurm_cpu_bind_type, "none") != 0;
  return false;
}

int affinity_cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return online_cpu_count();
}

int online_cpu_count() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}
