// mpirun: the Open MPI command line and environment ./launch --mpi runs (pure; the supervisor runs
// it and re-tags its `[1,R]<stdout>:` output, see tagger.h parse_mpi_tag).
#pragma once
#include <string>
#include <vector>

#include "launcher/hosts.h"
#include "launcher/ssh.h"

struct MpirunInputs {
  int np = 0;
  std::vector<HostSlots> hosts;       // hosts with the ranks placed on them (slots = ranks there)
  std::vector<std::string> command;   // CMD ARGS (CMD already resolved to a path or as given)
  std::vector<std::string> base_env;  // the launcher's environment
  SshOptions ssh;                     // -p/-i/-F -> plm_rsh_args
  bool as_root = false;               // --allow-run-as-root
  bool all_loopback = false;          // every host is this machine or a 127.x address
  std::string network_interface;      // --network-interface
  int openblas_threads = 1;           // used unless the user set OPENBLAS_NUM_THREADS
  bool oversubscribed = false;        // some host runs more ranks than this machine has cores
  std::string job_id, secret;
  std::vector<std::string> extra_env;  // -x VAR[=VALUE], as given
  std::vector<std::string> mpi_args;   // --mpi-args words, before CMD
  std::string bind_to = "none", map_by = "slot";
};

struct MpirunPlan {
  std::vector<std::string> argv;  // argv[0] = "mpirun"
  std::vector<std::string> env;   // mpirun's complete environment (secret only here, never in argv)
  bool yield_set = false;         // oversubscribed: OMPI_MCA_mpi_yield_when_idle=1 is ours (the user set none)
};

// The Open MPI settings that keep a job on this machine's loopback: tcp and Open MPI's own
// out-of-band channel on lo only, no host-name resolution (names only ssh_config knows would go
// to DNS), and the self,tcp BTLs (several "hosts" on one machine crash Open MPI's shared-memory
// BTL). build_mpirun_plan sets them for an all-loopback job; the tests' environment sets them all.
const std::vector<std::pair<std::string, std::string>>& loopback_openmpi_env();

// mpirun [--allow-run-as-root] -np N -H h:s,... -bind-to none -map-by slot --tag-output
//        -x BARESGD_COMM=mpi -x OPENBLAS_NUM_THREADS -x BARESGD_JOB_ID -x BARESGD_SECRET
//        -x OMPI_MCA_... [-mca plm_rsh_args "-F cfg -p P -i key"] CMD ARGS
// Environment: the launcher's, without inherited BARESGD_* (the per-rank ones come from Open MPI),
// plus the -x values; as horovodrun does, every exported variable gets its -x except the deny
// list: host-specific ones (env.h is_host_specific_env: HOSTNAME, PWD, OLDPWD, SHLVL, SSH_*,
// XDG_*, BASH_FUNC_*, DISPLAY, ...), names that are not shell identifiers, and the per-rank
// BARESGD_* ones. -x VAR=VALUE sets VAR in mpirun's environment (the value never in argv) and
// adds -x VAR; -x VAR forwards the caller's VAR. --bind-to / --map-by replace none / slot;
// --mpi-args words come after the launcher's own arguments, just before CMD. An
// all-loopback job gets loopback_openmpi_env() (a one-host job, loopback or not, runs the self,vader
// BTLs instead: no rank opens a tcp listener) and
// the ob1 pml (no UCX start-up inside one machine); --network-interface sets the tcp if_include
// variables instead of lo. Oversubscribed hosts get OMPI_MCA_mpi_yield_when_idle=1 (mpirun's -H
// slots hide the oversubscription from Open MPI, which would busy-poll; src/mpi_yield.h). The
// user's own OMPI_MCA_* values win.
MpirunPlan build_mpirun_plan(const MpirunInputs& in);
