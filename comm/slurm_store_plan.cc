// slurm_store_plan: rank 0's node and the port sequence of srun's Gloo rendezvous (see the header).
#include "comm/slurm_store_plan.h"

#include <stdexcept>

#include "comm/slurm_hostlist.h"
#include "comm/store_munge_check.h"

std::string node_of_task(const std::vector<std::string>& nodes, const std::vector<int>& tasks_per_node, int rank) {
  long first = 0;
  for (size_t n = 0; n < nodes.size() && n < tasks_per_node.size(); ++n) {
    if (rank >= first && rank < first + tasks_per_node[n]) return nodes[n];
    first += tasks_per_node[n];
  }
  return "";
}

SlurmStorePlan plan_slurm_store(const std::string& job_id, const std::string& step_id, const std::string& nodelist,
                                const std::string& tasks_per_node, int size) {
  std::vector<std::string> nodes;
  std::vector<int> counts;
  try {
    nodes = expand_slurm_hostlist(nodelist, "SLURM_STEP_NODELIST");
    counts = expand_slurm_tasks_per_node(tasks_per_node, "SLURM_STEP_TASKS_PER_NODE");
  } catch (const SlurmListError& e) {
    throw std::invalid_argument(e.what());
  }
  long total = 0;
  for (int c : counts) total += c;
  if (counts.size() != nodes.size() || total != size)
    throw std::invalid_argument(slurm_quoted("SLURM_STEP_TASKS_PER_NODE", tasks_per_node) + " over " +
                                slurm_quoted("SLURM_STEP_NODELIST", nodelist) + " is " + std::to_string(total) +
                                " tasks on " + std::to_string(counts.size()) + " of " + std::to_string(nodes.size()) +
                                " nodes, not this step's " + std::to_string(size) + " tasks");
  SlurmStorePlan plan;
  plan.rank0_node = node_of_task(nodes, counts, 0);
  plan.one_node = nodes.size() == 1;
  plan.ports = store_munge_ports(job_id, step_id);
  plan.step_payload = munge_step_payload(job_id, step_id);
  return plan;
}

SlurmAddrQuery slurm_addr_query(const SlurmStorePlan& plan, bool interface_chosen, const std::string& this_node) {
  SlurmAddrQuery q;
  if (plan.one_node && interface_chosen) {
    q.use_interface = true;
    return q;
  }
  q.nodes = {plan.rank0_node};
  if (plan.one_node || this_node.empty()) return q;  // one node: Gloo stays on loopback
  if (this_node == plan.rank0_node) {
    q.own = 0;
  } else {
    q.nodes.push_back(this_node);
    q.own = 1;
  }
  return q;
}
