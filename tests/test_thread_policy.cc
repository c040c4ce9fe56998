// The compute-thread decision (src/thread_policy.h): --threads, the OpenBLAS variables, the
// affinity mask's CPUs shared by the ranks on the host.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "src/thread_policy.h"

namespace {

// The number of CPUs in the calling thread's Cpus_allowed_list ("0-3,6") in
// /proc/thread-self/status: the affinity mask as the kernel reports it, not through
// sched_getaffinity. -1 when it cannot be read.
int cpus_allowed_listed() {
  std::ifstream status("/proc/thread-self/status");
  const std::string key = "Cpus_allowed_list:";
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(key, 0) != 0) continue;
    std::stringstream list(line.substr(key.size()));
    int n = 0;
    for (std::string range; std::getline(list, range, ',');) {
      int first = 0, last = 0;
      const int got = std::sscanf(range.c_str(), "%d-%d", &first, &last);
      if (got < 1) return -1;
      n += got == 2 ? last - first + 1 : 1;
    }
    return n;
  }
  return -1;
}

ThreadInputs inputs(int cpus, int local_size) {
  ThreadInputs in;
  in.cpus = cpus;
  in.local_size = local_size;
  return in;
}

TEST(ThreadPolicy, DefaultSharesTheCpusAmongTheLocalRanks) {
  EXPECT_EQ(decide_thread_policy(inputs(8, 1)).compute_threads, 8);
  EXPECT_EQ(decide_thread_policy(inputs(8, 2)).compute_threads, 4);
  EXPECT_EQ(decide_thread_policy(inputs(8, 3)).compute_threads, 2);
  EXPECT_EQ(decide_thread_policy(inputs(2, 4)).compute_threads, 1);  // never 0
  EXPECT_EQ(decide_thread_policy(inputs(6, 0)).compute_threads, 6);  // no local size known: one rank
  EXPECT_EQ(decide_thread_policy(inputs(0, 1)).compute_threads, 1);
}

TEST(ThreadPolicy, ThreadsFlagWinsOverEverything) {
  ThreadInputs in = inputs(2, 2);
  in.threads_flag = 8;
  in.openblas_num_threads = "1";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 8);  // not capped at the CPUs
}

TEST(ThreadPolicy, OpenblasNumThreadsIsReadAsOpenblasReadsIt) {
  ThreadInputs in = inputs(4, 2);
  in.openblas_num_threads = "3";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 3);  // not divided by the local ranks
  in.openblas_num_threads = "16";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // at most the CPUs
  in.openblas_num_threads = "2x";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // its leading integer
  in.openblas_num_threads = "abc";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // nothing usable: every CPU
  in.openblas_num_threads = "0";
  in.omp_num_threads = "1";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 1);  // then OMP_NUM_THREADS
  in.goto_num_threads = "2";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // GOTO_NUM_THREADS before it
  in.openblas_num_threads = nullptr;
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // unset: the default share, not the others
}

TEST(ThreadPolicy, OpenblasItselfRunsOneThread) {
  ThreadInputs in = inputs(8, 1);
  EXPECT_EQ(decide_thread_policy(in).blas_threads, 1);
  in.threads_flag = 4;
  EXPECT_EQ(decide_thread_policy(in).blas_threads, 1);
}

TEST(ThreadPolicy, CoresPerRankIsTheLaunchersDefault) {
  EXPECT_EQ(cores_per_rank(16, 4), 4);
  EXPECT_EQ(cores_per_rank(3, 2), 1);
  EXPECT_EQ(cores_per_rank(1, 8), 1);
}

TEST(ThreadPolicy, AffinityCpuCountIsTheAffinityMasksCpuCount) {
  const int listed = cpus_allowed_listed();
  ASSERT_GE(listed, 1) << "no Cpus_allowed_list in /proc/thread-self/status";
  EXPECT_EQ(affinity_cpu_count(), listed);
  // A thread narrowed to one CPU (the first it may use) counts that one: the count follows the mask.
  int narrowed = 0, narrowed_listed = 0;
  std::thread one_cpu([&] {
    cpu_set_t set, one;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) ++first;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return;  // this thread only
    narrowed = affinity_cpu_count();
    narrowed_listed = cpus_allowed_listed();
  });
  one_cpu.join();
  EXPECT_EQ(narrowed_listed, 1) << "could not narrow a thread to one CPU";
  EXPECT_EQ(narrowed, 1);
}

TEST(ThreadPolicy, SpinsWhileWaitingOnlyWhenEveryComputeThreadHasACpu) {
  EXPECT_TRUE(decide_thread_policy(inputs(2, 2)).spin_while_waiting);   // 2 ranks x 1 thread on 2 CPUs
  EXPECT_TRUE(decide_thread_policy(inputs(2, 1)).spin_while_waiting);   // 1 rank x 2 threads
  EXPECT_FALSE(decide_thread_policy(inputs(2, 4)).spin_while_waiting);  // 4 ranks x 1 thread on 2 CPUs
  ThreadInputs in = inputs(2, 2);
  in.threads_flag = 2;  // 2 ranks x 2 threads on 2 CPUs
  EXPECT_FALSE(decide_thread_policy(in).spin_while_waiting);
  in.threads_flag = 1;
  in.cpus = 3;
  EXPECT_TRUE(decide_thread_policy(in).spin_while_waiting);
}

}  // namespace
