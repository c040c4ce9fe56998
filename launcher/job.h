// job: ./launch from command line to exit status — validates flags and hosts, resolves host
// addresses, checks ssh reachability, starts the store (Gloo) or mpirun (MPI), spawns the ranks
// and hands them to the supervisor.
#pragma once
#include <string>
#include <vector>

// args = argv[1..]. Returns the process exit status.
int run_launch(const std::vector<std::string>& args);

// Environment variable names a launcher does not forward to remote ranks (host- or
// session-specific: HOSTNAME, PWD, SSH_*, DISPLAY, ...). BARESGD_* are always replaced.
bool is_host_specific_env(const std::string& name);
