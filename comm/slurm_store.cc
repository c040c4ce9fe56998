// slurm_store: see slurm_store.h.
#include "comm/slurm_store.h"

#include <cstdio>
#include <stdexcept>

#include "comm/munge_store_client.h"
#include "comm/slurm_scontrol.h"
#include "comm/slurm_store_plan.h"
#include "comm/store_munge.h"

bool uses_slurm_store(const RankInfo& info) {
  return info.source == "slurm" && info.size > 1 && info.store_addr.empty() && info.c10d_store_addr.empty() &&
         !info.slurm_job.empty();
}

namespace {

// The plan, checked against where this task says it runs.
SlurmStorePlan checked_plan(const RankInfo& info) {
  SlurmStorePlan plan;
  try {
    plan = plan_slurm_store(info.slurm_job, info.slurm_step, info.slurm_nodelist, info.slurm_tasks_per_node, info.size);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("cannot find rank 0's node: ") + e.what());
  }
  if (info.rank == 0 && !info.hostname.empty() && info.hostname != plan.rank0_node)
    throw std::runtime_error("this is rank 0 on node " + info.hostname +
                             ", but SLURM_STEP_NODELIST and "
                             "SLURM_STEP_TASKS_PER_NODE put rank 0 on " +
                             plan.rank0_node +
                             " (a task distribution other than block or cyclic?): the other ranks would not find "
                             "its store");
  return plan;
}

// The store's address by the rule of slurm_store.h (slurm_addr_query); *why says where it came
// from, for rank 0's line; *own is this task's node's NodeAddr when the step spans nodes (Gloo
// binds it when no interface was chosen).
std::string store_addr(const RankInfo& info, const SlurmStorePlan& plan, const InterfaceChoice& iface,
                       std::chrono::milliseconds timeout, std::string* why, std::string* own) {
  const SlurmAddrQuery q = slurm_addr_query(plan, !iface.empty(), info.hostname);
  if (q.use_interface) {
    *why = iface.named() + ", on the step's one node";
    return interface_choice_ipv4(iface);
  }
  const std::vector<std::string> addrs = slurm_node_ipv4s(q.nodes, timeout);
  if (q.own >= 0) *own = addrs[static_cast<size_t>(q.own)];
  *why = plan.rank0_node + "'s NodeAddr, from scontrol";
  if (!iface.empty())
    *why += "; " + iface.named() +
            " binds Gloo only: the step spans several nodes, and they know no other address of " + plan.rank0_node;
  return addrs[0];
}

}  // namespace

SlurmStore open_slurm_store(const RankInfo& info, const InterfaceChoice& iface, std::chrono::milliseconds timeout) {
  if (!munge_available())
    throw std::runtime_error(
        "srun started the ranks without MPI and this ./train was built without libmunge, "
        "which its Gloo rendezvous under srun needs (install libmunge-dev and rebuild, use "
        "srun --mpi=pmix, or pass --rendezvous-dir DIR)");
  const SlurmStorePlan plan = checked_plan(info);
  SlurmStore s;
  std::string why;
  MungeStoreTarget target{plan.rank0_node, store_addr(info, plan, iface, timeout, &why, &s.node_addr), plan.ports,
                          plan.step_payload, info.munge_socket};
  if (info.rank == 0) {
    MungeStoreServer::Config c;
    c.bind_addr = target.addr;
    c.ports = plan.ports;
    c.step_payload = plan.step_payload;
    c.munge_socket = info.munge_socket;
    c.auth_timeout = timeout;
    s.server.reset(new MungeStoreServer(c));
    target.ports = {s.server->port()};  // rank 0 knows which one it got
    std::fprintf(stderr, "train: rank 0 serves the Gloo rendezvous on %s at %s:%d (%s)\n", plan.rank0_node.c_str(),
                 target.addr.c_str(), s.server->port(), why.c_str());
  }
  std::string where;
  const int fd = munge_store_connect(target, timeout, &where);
  s.client.reset(new StoreClient(fd, where, timeout));
  s.where = "rank 0's MUNGE store at " + where;
  return s;
}
