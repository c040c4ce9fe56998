// mpi_yield: the oversubscription test for Open MPI's yield_when_idle (see mpi_yield.h).
#include "src/mpi_yield.h"

MpiYield decide_mpi_yield(int local_size, int local_rank, int host_cpus, const char* user_value) {
  MpiYield y;
  if (user_value || local_size <= host_cpus) return y;
  y.set = true;
  if (local_rank == 0)
    y.line = std::to_string(local_size) + " ranks on this host's " + std::to_string(host_cpus) +
             (host_cpus == 1 ? " CPU" : " CPUs") +
             ": Open MPI yields when idle (OMPI_MCA_mpi_yield_when_idle=1, set before MPI_Init)";
  return y;
}
