// thread_policy: how many compute threads each rank runs, decided once at start-up (train_main)
// from the CPUs the rank is given — its affinity mask when its starter bound it, else Slurm's
// SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, else its host's CPUs over the
// ranks there — or --threads, and handed to the training as a value with the rule that decided.
// Pure: the mask's count, the variables and the starter's binding come in as values. The
// launcher's default OPENBLAS_NUM_THREADS for a rank is cores_per_rank too, so ./launch and
// ./train agree.
#pragma once

// Which rule gave the count (the timing line shows thread_rule_name).
enum class ThreadRule { kThreadsFlag, kBoundCpus, kSlurmCpusPerTask, kOmpNumThreads, kOpenblasNumThreads, kHostShare };

struct ThreadInputs {
  int cpus = 1;                 // CPUs this process may run on (affinity_cpu_count)
  int online_cpus = 0;          // CPUs this host has online (0: unknown, taken as cpus)
  int local_size = 1;           // ranks on this host (RankInfo::local_size)
  int threads_flag = 0;         // --threads, 0 when not given
  bool bound_per_task = false;  // the starter bound this rank to its own CPUs (started_bound_per_task)
  // The environment's SLURM_CPUS_PER_TASK, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
  // GOTO_NUM_THREADS (nullptr: unset).
  const char* slurm_cpus_per_task = nullptr;
  const char* omp_num_threads = nullptr;
  const char* openblas_num_threads = nullptr;
  const char* goto_num_threads = nullptr;
};

struct ThreadPolicy {
  // Threads the net splits each batch across (>= 1; Net caps it at the batch's 16-sample blocks).
  int compute_threads = 1;
  ThreadRule rule = ThreadRule::kHostShare;
  // Threads OpenBLAS itself runs: 1. It only sees the small fc matrices inside each slice, and its
  // idle workers would otherwise spin in sched_yield against the net's.
  int blas_threads = 1;
  // The CPUs this host's ranks share: the affinity mask's when it is inherited (every rank has
  // the same), the host's online CPUs when each rank is bound to its own.
  int host_cpus = 1;
  // Every compute thread of every rank on this host has a CPU of its own (local_size x
  // compute_threads <= host_cpus): a rank waiting for its peers' bytes may spin on the socket (its
  // CPU would idle otherwise) instead of sleeping and being woken (CommOptions::spin_while_waiting).
  bool spin_while_waiting = false;
};

// The default share of a host's CPUs for one of its local_size ranks: cpus / local_size, at least 1.
int cores_per_rank(int cpus, int local_size);

// The first rule that applies, in this order:
//   1. --threads N: N.
//   2. The rank is bound to its own CPUs (bound_per_task) and its mask is not the whole host: the
//      mask's CPUs.
//   3. SLURM_CPUS_PER_TASK (a whole number >= 1; srun -c): it, at most the rank's share of the
//      mask (cpus / local_size: the mask is inherited, so the host's ranks share it).
//   4. OMP_NUM_THREADS (its leading integer >= 1), at most cpus. Else OPENBLAS_NUM_THREADS, read as
//      OpenBLAS reads it (its leading integer; when that is not positive, GOTO_NUM_THREADS, then
//      every CPU), at most cpus.
//   5. The host's CPUs over its local ranks: cores_per_rank(cpus, local_size).
ThreadPolicy decide_thread_policy(const ThreadInputs& in);

// "--threads", "bound-cpus", "SLURM_CPUS_PER_TASK", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
// "cpus/local-ranks": one word each, as the timing line prints it in parentheses.
const char* thread_rule_name(ThreadRule rule);

// Whether the starter that made this rank bound it to CPUs of its own, from what that starter
// leaves in the rank's environment. A mask is inherited by every child, so a binding counts only
// when it was made for this rank: under mpirun (source "ompi") Open MPI sets
// OMPI_MCA_orte_bound_at_launch=1 for a rank it bound (--bind-to core, its default at np <= 2);
// under srun (source "slurm") Slurm sets SLURM_CPU_BIND_TYPE (not "none") when task/affinity binds
// each task, the test Open MPI itself uses for a direct launch. Any other source (./launch, which
// binds nothing itself; torchrun; a single process) and a mpirun rank started inside an srun task
// inherit their parent's mask: not bound per task. source is RankInfo::source.
bool started_bound_per_task(const char* source, const char* ompi_bound_at_launch, const char* slurm_cpu_bind_type);

// The CPUs in this process's affinity mask (sched_getaffinity), else the online CPUs, at least 1.
int affinity_cpu_count();
// The host's online CPUs (sysconf), at least 1.
int online_cpu_count();
