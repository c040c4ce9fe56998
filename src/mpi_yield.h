// mpi_yield: whether a rank asks Open MPI to yield its CPU while it waits, decided before
// MPI_Init (train_main). Open MPI busy-polls in every wait unless mpi_yield_when_idle is set; it
// sets that itself only when mpirun knows it oversubscribed a node (--oversubscribe), not when
// the slots it was given (-H host:N, a hostfile, srun's tasks) outnumber the node's CPUs. Ranks
// that outnumber their host's CPUs then spin against each other: 4 MPI ranks on 2 cores took
// 18.3 s an epoch under srun, 1.68 s with yielding. Pure: the counts and the variable come in.
#pragma once
#include <string>

struct MpiYield {
  bool set = false;  // put OMPI_MCA_mpi_yield_when_idle=1 in this process's environment
  std::string line;  // what to say on stderr (local rank 0 only), else ""
};

// More ranks on this host (local_size) than CPUs they share (host_cpus, ThreadPolicy::host_cpus),
// and OMPI_MCA_mpi_yield_when_idle not set by the user (user_value nullptr): set it to 1, and
// local rank 0 says so in one line. A value the user set (even 0) is left alone, silently.
MpiYield decide_mpi_yield(int local_size, int local_rank, int host_cpus, const char* user_value);
