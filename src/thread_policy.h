// thread_policy: how many compute threads each rank runs, decided once at start-up (train_main)
// from this process's CPUs (its affinity mask), the ranks on this host, --threads and the
// OpenBLAS variables, and handed to the training as a value. The launcher's default
// OPENBLAS_NUM_THREADS for a rank is cores_per_rank too, so ./launch and ./train agree.
#pragma once

struct ThreadInputs {
  int cpus = 1;          // CPUs this process may run on (affinity_cpu_count)
  int local_size = 1;    // ranks on this host (RankInfo::local_size)
  int threads_flag = 0;  // --threads, 0 when not given
  // The environment's OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS and OMP_NUM_THREADS (nullptr: unset).
  const char* openblas_num_threads = nullptr;
  const char* goto_num_threads = nullptr;
  const char* omp_num_threads = nullptr;
};

struct ThreadPolicy {
  // Threads the net splits each batch across (>= 1; Net caps it at the batch's 16-sample blocks).
  int compute_threads = 1;
  // Threads OpenBLAS itself runs: 1. It only sees the small fc matrices inside each slice, and its
  // idle workers would otherwise spin in sched_yield against the net's.
  int blas_threads = 1;
  // Every compute thread of every rank on this host has a CPU of its own (local_size x
  // compute_threads <= cpus): a rank waiting for its peers' bytes may spin on the socket (its CPU
  // would idle otherwise) instead of sleeping and being woken (CommOptions::spin_while_waiting).
  bool spin_while_waiting = false;
};

// The default share of a host's CPUs for one of its local_size ranks: cpus / local_size, at least 1.
int cores_per_rank(int cpus, int local_size);

// --threads N gives N. Else OPENBLAS_NUM_THREADS, read as OpenBLAS reads it (its leading integer;
// when that is not positive, GOTO_NUM_THREADS, then OMP_NUM_THREADS, then every CPU), at most
// cpus. Else cores_per_rank(cpus, local_size).
ThreadPolicy decide_thread_policy(const ThreadInputs& in);

// The CPUs in this process's affinity mask (sched_getaffinity), else the online CPUs, at least 1.
int affinity_cpu_count();
