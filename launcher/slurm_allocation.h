// slurm_allocation: the Slurm allocation ./launch runs inside (salloc, or an sbatch script): its
// job id, hosts and tasks per host, read from the job's environment. Pure: the environment comes
// in as a map, errors are thrown as SlurmListError with one line naming the variable and value.
//
// Read: SLURM_JOB_ID, SLURM_JOB_NODELIST (the hosts, slurm_hostlist.h), SLURM_TASKS_PER_NODE (the
// tasks each host holds, in the same order) and SLURM_NTASKS (the job's task count, if set).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "launcher/hosts.h"
#include "comm/slurm_hostlist.h"

using EnvMap = std::map<std::string, std::string>;

struct SlurmAllocation {
  std::string job_id;            // SLURM_JOB_ID
  std::string nodelist;          // SLURM_JOB_NODELIST as Slurm wrote it
  std::string tasks_per_node;    // SLURM_TASKS_PER_NODE as Slurm wrote it
  std::vector<HostSlots> hosts;  // the nodes in order, slots = the tasks the node holds
  int slots = 0;                 // the tasks of all nodes
  int ntasks = 0;                // SLURM_NTASKS, else slots
  // "hpc[01-02]: 2(x2)", as errors and the dry run show the allocation.
  std::string summary() const { return nodelist + ": " + tasks_per_node; }
};

// True when env describes an allocation: SLURM_JOB_ID and SLURM_JOB_NODELIST both set.
bool in_slurm_allocation(const EnvMap& env);

// The allocation env describes (in_slurm_allocation(env) must be true). Refuses a missing
// SLURM_TASKS_PER_NODE, a task list with another node count than the host list, a host listed
// twice, and SLURM_NTASKS that is not a whole number in 1..slots.
SlurmAllocation read_slurm_allocation(const EnvMap& env);

// NAME=value for every variable of environ-style "NAME=value" strings.
EnvMap env_map(const std::vector<std::string>& env);
