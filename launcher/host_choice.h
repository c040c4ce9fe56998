// host_choice: where ./launch's ranks go and how many there are — -H, --hostfile, the Slurm
// allocation ./launch runs inside, or localhost:N — decided from the flags and the environment.
// Pure (the hostfile itself is read by the caller); errors are HostError with one line.
#pragma once
#include <string>
#include <vector>

#include "launcher/hosts.h"
#include "launcher/options.h"
#include "launcher/slurm_allocation.h"

enum class HostSource { kHostsFlag, kHostfile, kSlurm, kLocalhost };

struct HostChoice {
  HostSource source = HostSource::kLocalhost;
  std::vector<HostSlots> hosts;  // empty for kHostfile: read opts.hostfile
  int np = 0;                    // -np, or in an allocation without -np its task count
  SlurmAllocation slurm;         // kSlurm only
  // For the dry run and --verbose: "the Slurm allocation 1234 (hpc[01-02]: 2(x2))", else "".
  std::string described() const;
};

// -H or --hostfile win. Otherwise, inside a Slurm allocation (SLURM_JOB_ID and
// SLURM_JOB_NODELIST set) the hosts and their slots are the allocation's, -np defaults to
// SLURM_NTASKS (else the sum of SLURM_TASKS_PER_NODE), and an -np larger than the allocation is
// refused. Outside one, -np is required and the ranks run on localhost.
HostChoice choose_hosts(const LaunchOptions& opts, const EnvMap& env);
