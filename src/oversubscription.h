// oversubscription: the one line that says a host runs more ranks than it has CPUs, so the run's
// times include waiting for a CPU. ./launch says it for the job (launcher/job_plan.h
// oversubscribed_line); a rank started otherwise (mpirun, srun, torchrun) says it itself, local
// rank 0 only; --metrics records it in the header and ./report marks the times it affects.
#pragma once
#include <string>

// What follows "N ranks on ...'s M CPUs" in that line.
inline const char* oversubscribed_consequence() {
  return "times include waiting for a CPU (descheduled_s in --metrics, marked in ./report)";
}

// Pure. "" when local_size <= host_cpus or local_rank != 0; else the trainer's line, joined to
// the MPI yield line (src/mpi_yield.h, "" when none) so one line says both:
// "4 ranks on this host's 2 CPUs: times include waiting for a CPU (...)".
std::string trainer_oversubscribed_line(int local_size, int local_rank, int host_cpus, const std::string& yield_line);
