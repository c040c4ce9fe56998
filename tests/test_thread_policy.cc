// The compute-thread decision (src/thread_policy.h), one test per rule: --threads, a per-task
// binding's mask, SLURM_CPUS_PER_TASK, OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, the affinity mask's
// CPUs shared by the ranks on the host; how a per-task binding is told from an inherited mask; and
// ./train's timing line naming the rule, under real starters (a single process, mpirun).
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "src/thread_policy.h"
#include "tests/comm_test_util.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

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
  in.omp_num_threads = "1";
  in.slurm_cpus_per_task = "1";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 8);  // not capped at the CPUs
  EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kThreadsFlag);
}

TEST(ThreadPolicy, OpenblasNumThreadsIsReadAsOpenblasReadsIt) {
  ThreadInputs in = inputs(4, 2);
  in.openblas_num_threads = "3";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 3);  // not divided by the local ranks
  EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kOpenblasNumThreads);
  in.openblas_num_threads = "16";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // at most the CPUs
  in.openblas_num_threads = "2x";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // its leading integer
  in.openblas_num_threads = "abc";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // nothing usable: every CPU
  in.openblas_num_threads = "0";
  in.goto_num_threads = "2";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // then GOTO_NUM_THREADS
  in.openblas_num_threads = nullptr;
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // unset: the default share, GOTO alone is not read
  EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kHostShare);
}

// Rule 4: OMP_NUM_THREADS, the count HPC sites export (Slurm's docs: OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK),
// comes before OPENBLAS_NUM_THREADS (which ./launch sets to its default share unless the user did).
TEST(ThreadPolicy, OmpNumThreadsIsReadBeforeOpenblasNumThreads) {
  ThreadInputs in = inputs(4, 2);
  in.omp_num_threads = "3";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 3);  // not divided by the local ranks
  EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kOmpNumThreads);
  in.openblas_num_threads = "1";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 3);  // before OPENBLAS_NUM_THREADS
  in.omp_num_threads = "16";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // at most the CPUs
  in.omp_num_threads = "2,1";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 2);  // OpenMP's nested list: its first level
  for (const char* unusable : {"0", "", "x", "-3"}) {
    in.omp_num_threads = unusable;
    EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kOpenblasNumThreads) << unusable;
    EXPECT_EQ(decide_thread_policy(in).compute_threads, 1) << unusable;
  }
}

// Rule 3: srun -c N (SLURM_CPUS_PER_TASK) without a per-task binding: N, before the OpenMP and
// OpenBLAS variables, at most the rank's share of the mask its host's ranks inherit.
TEST(ThreadPolicy, SlurmCpusPerTaskGivesTheTasksCpus) {
  ThreadInputs in = inputs(32, 4);  // srun -n 4 -c 4 on a 32-CPU node, task/none: every rank sees 32
  in.online_cpus = 32;
  in.slurm_cpus_per_task = "4";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // not 32 / 4 = 8
  EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kSlurmCpusPerTask);
  in.omp_num_threads = "1";
  in.openblas_num_threads = "2";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 4);  // before OMP_NUM_THREADS and OPENBLAS_NUM_THREADS
  in.slurm_cpus_per_task = "16";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 8);  // at most 32 CPUs / 4 ranks
  for (const char* unusable : {"0", "", "4x", "-1", "9999999"}) {
    in.slurm_cpus_per_task = unusable;
    EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kOmpNumThreads) << unusable;
  }
  ThreadInputs flag = inputs(32, 4);
  flag.slurm_cpus_per_task = "4";
  flag.threads_flag = 2;
  EXPECT_EQ(decide_thread_policy(flag).compute_threads, 2);  // --threads still wins
  EXPECT_EQ(decide_thread_policy(flag).rule, ThreadRule::kThreadsFlag);
}

// Rule 2: the case, srun -n 4 -c 8 under task/affinity on a 32-CPU node: each rank's mask
// holds its own 8 CPUs, and it runs 8 threads (it ran 8 / 4 = 2 before).
TEST(ThreadPolicy, RankBoundToItsOwnCpusUsesThemAll) {
  ThreadInputs in = inputs(8, 4);
  in.online_cpus = 32;
  in.bound_per_task = true;
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 8);
  EXPECT_EQ(decide_thread_policy(in).rule, ThreadRule::kBoundCpus);
  EXPECT_EQ(decide_thread_policy(in).host_cpus, 32);         // the ranks' masks are their own: the host's CPUs
  EXPECT_TRUE(decide_thread_policy(in).spin_while_waiting);  // 4 x 8 = 32
  in.slurm_cpus_per_task = "2";
  in.omp_num_threads = "1";
  in.openblas_num_threads = "1";
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 8);  // the binding is what the rank was given
  in.threads_flag = 3;
  EXPECT_EQ(decide_thread_policy(in).compute_threads, 3);  // --threads still wins
  // The same mask inherited (no per-task binding): the host's ranks share it.
  ThreadInputs shared = inputs(8, 4);
  shared.online_cpus = 32;
  EXPECT_EQ(decide_thread_policy(shared).compute_threads, 2);
  EXPECT_EQ(decide_thread_policy(shared).rule, ThreadRule::kHostShare);
  EXPECT_EQ(decide_thread_policy(shared).host_cpus, 8);
  // A "binding" to the whole host binds nothing (Slurm's mask_cpu of all CPUs): shared as well.
  ThreadInputs whole = inputs(32, 4);
  whole.online_cpus = 32;
  whole.bound_per_task = true;
  EXPECT_EQ(decide_thread_policy(whole).compute_threads, 8);
  EXPECT_EQ(decide_thread_policy(whole).rule, ThreadRule::kHostShare);
}

// How a per-task binding is told from an inherited mask: by the starter that made the rank.
TEST(ThreadPolicy, OnlyTheRanksOwnStarterBindsIt) {
  // mpirun --bind-to core (its default at -np <= 2): OMPI_MCA_orte_bound_at_launch=1.
  EXPECT_TRUE(started_bound_per_task("ompi", "1", nullptr));
  EXPECT_FALSE(started_bound_per_task("ompi", nullptr, nullptr));  // --bind-to none (./launch --mpi's default)
  EXPECT_FALSE(started_bound_per_task("ompi", "0", nullptr));
  // srun under task/affinity: SLURM_CPU_BIND_TYPE=mask_cpu: (or cores, map_cpu:, ...).
  EXPECT_TRUE(started_bound_per_task("slurm", nullptr, "mask_cpu:"));
  EXPECT_TRUE(started_bound_per_task("slurm", nullptr, "cores"));
  EXPECT_FALSE(started_bound_per_task("slurm", nullptr, "none"));  // srun --cpu-bind=none
  EXPECT_FALSE(started_bound_per_task("slurm", nullptr, ""));
  EXPECT_FALSE(started_bound_per_task("slurm", nullptr, nullptr));  // task/none
  // A mask inherited from an srun task: mpirun or ./launch ranks inside `srun -n 1 -c 8` share it.
  EXPECT_FALSE(started_bound_per_task("ompi", nullptr, "mask_cpu:"));
  EXPECT_FALSE(started_bound_per_task("launch", nullptr, "mask_cpu:"));
  EXPECT_FALSE(started_bound_per_task("launch", "1", nullptr));
  EXPECT_FALSE(started_bound_per_task("torchrun", nullptr, "cores"));
  EXPECT_FALSE(started_bound_per_task("none", nullptr, "cores"));
  EXPECT_FALSE(started_bound_per_task(nullptr, "1", "cores"));
}

TEST(ThreadPolicy, EachRuleHasOneWordForTheTimingLine) {
  EXPECT_STREQ(thread_rule_name(ThreadRule::kThreadsFlag), "--threads");
  EXPECT_STREQ(thread_rule_name(ThreadRule::kBoundCpus), "bound-cpus");
  EXPECT_STREQ(thread_rule_name(ThreadRule::kSlurmCpusPerTask), "SLURM_CPUS_PER_TASK");
  EXPECT_STREQ(thread_rule_name(ThreadRule::kOmpNumThreads), "OMP_NUM_THREADS");
  EXPECT_STREQ(thread_rule_name(ThreadRule::kOpenblasNumThreads), "OPENBLAS_NUM_THREADS");
  EXPECT_STREQ(thread_rule_name(ThreadRule::kHostShare), "cpus/local-ranks");
  EXPECT_EQ(decide_thread_policy(inputs(8, 2)).rule, ThreadRule::kHostShare);
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

// ---- ./train's timing line names the rule (the `threads=N` field stays as it was) ----

// The variables the rules read, unset, then `extra`: ./train's timing line from a 2-step run.
std::string timing_line(const std::string& start, const std::string& extra, const std::string& flags = "") {
  testutil::RunResult r = testutil::run(
      "env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS -u SLURM_CPUS_PER_TASK "
      "-u SLURM_CPU_BIND_TYPE BARESGD_TIMING=1 " +
          extra + " " + start + testutil::train_bin() + " --max-steps 2 " + flags + " 2>&1",
      300);
  EXPECT_EQ(r.status, 0) << r.out;
  const size_t at = r.out.find("timing: rank=0 ");
  return at == std::string::npos ? r.out : r.out.substr(at, r.out.find('\n', at) - at);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(ThreadPolicy, TimingLineSaysWhichRuleDecided) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string share = " threads=" + std::to_string(affinity_cpu_count()) + " (cpus/local-ranks)";
  EXPECT_TRUE(ends_with(timing_line("", ""), share)) << timing_line("", "");
  EXPECT_TRUE(ends_with(timing_line("", "SLURM_CPUS_PER_TASK=1 OMP_NUM_THREADS=2"), " threads=1 (SLURM_CPUS_PER_TASK)"))
      << timing_line("", "SLURM_CPUS_PER_TASK=1");
  EXPECT_TRUE(ends_with(timing_line("", "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=2"), " threads=1 (OMP_NUM_THREADS)"))
      << timing_line("", "OMP_NUM_THREADS=1");
  EXPECT_TRUE(ends_with(timing_line("", "OPENBLAS_NUM_THREADS=1"), " threads=1 (OPENBLAS_NUM_THREADS)"))
      << timing_line("", "OPENBLAS_NUM_THREADS=1");
  EXPECT_TRUE(ends_with(timing_line("", "OMP_NUM_THREADS=2", "--threads 1"), " threads=1 (--threads)"))
      << timing_line("", "", "--threads 1");
}

// A rank mpirun binds (--bind-to core) uses the CPUs of its own mask, whatever the variables say;
// --bind-to none leaves it the host's share.
TEST(ThreadPolicy, MpirunBoundRankUsesItsOwnCpus) {
  const std::string mpirun = commtest::find_in_path("mpirun");
  if (mpirun.empty()) BARESGD_SKIP("mpirun is not installed");
#if !BARESGD_HAVE_MPI
  BARESGD_SKIP("built without MPI");
#else
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string start = mpirun + " --allow-run-as-root -np 1 ";
  const std::string bound = timing_line(start + "--bind-to core -x OMP_NUM_THREADS ", "OMP_NUM_THREADS=7");
  if (online_cpu_count() > 1) {
    EXPECT_TRUE(std::regex_search(bound, std::regex(" threads=[0-9]+ \\(bound-cpus\\)$"))) << bound;
  }
  const std::string unbound = timing_line(start + "--bind-to none ", "");
  EXPECT_TRUE(ends_with(unbound, " threads=" + std::to_string(affinity_cpu_count()) + " (cpus/local-ranks)"))
      << unbound;
#endif
}

}  // namespace
