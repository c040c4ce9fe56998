// slurm_store_plan: where srun's tasks meet for a Gloo rendezvous with nothing shared but Slurm
// (pure; comm/slurm_store.h does the I/O). Rank 0 serves the store on its own node, which every
// task finds in the step's environment: SLURM_STEP_NODELIST (comm/slurm_hostlist.h) and
// SLURM_STEP_TASKS_PER_NODE, tasks laid out in blocks (node 0 holds tasks 0..c0-1, node 1 the next
// c1, ...; for the usual block and cyclic distributions task 0 is on the first node either way).
// The port is the first free one of the job step's sequence (store_munge_ports), which clients
// try in the same order.
#pragma once
#include <string>
#include <vector>

struct SlurmStorePlan {
  std::string rank0_node;    // the node rank 0 runs on, as Slurm names it
  bool one_node = false;     // every task of the step runs on rank0_node
  std::vector<int> ports;    // rank 0 binds the first free one; clients try them in order
  std::string step_payload;  // munge_step_payload(job, step): what credentials must carry
};

// The plan for task `rank` of `size` in job step job.step. Throws std::invalid_argument with one
// line naming the variable and its value when the lists are malformed, do not describe `size`
// tasks, or the ids are not numbers.
SlurmStorePlan plan_slurm_store(const std::string& job_id, const std::string& step_id, const std::string& nodelist,
                                const std::string& tasks_per_node, int size);

// The node task `rank` runs on under block distribution; "" when rank is outside the counts.
std::string node_of_task(const std::vector<std::string>& nodes, const std::vector<int>& tasks_per_node, int rank);

// Which addresses a task asks Slurm for (the rule of comm/slurm_store.h), decided before any I/O.
struct SlurmAddrQuery {
  bool use_interface = false;      // the store is at the chosen interface's address (one node)
  std::vector<std::string> nodes;  // else ask scontrol for these: rank 0's node, then maybe this one
  int own = -1;                    // index in nodes of this task's node, whose NodeAddr Gloo binds (several nodes only)
};

// For a task on this_node ("" = unknown) of plan's step, with or without an interface chosen.
SlurmAddrQuery slurm_addr_query(const SlurmStorePlan& plan, bool interface_chosen, const std::string& this_node);
