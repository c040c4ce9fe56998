// job: ./launch from command line to exit status — makes the job plan (job_plan.h: flags, hosts,
// addresses, environment), prints it for --dry-run, or checks ssh reachability, starts the store
// (Gloo) or mpirun (MPI), spawns the ranks and hands them to the supervisor.
#pragma once
#include <string>
#include <vector>

// args = argv[1..]. Returns the process exit status.
int run_launch(const std::vector<std::string>& args);
