// slurm_store: see slurm_store.h.
#include "comm/slurm_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <stdexcept>

#include "comm/munge_store_client.h"
#include "comm/slurm_store_plan.h"
#include "comm/store_munge.h"

bool uses_slurm_store(const RankInfo& info) {
  return info.source == "slurm" && info.size > 1 && info.store_addr.empty() && info.c10d_store_addr.empty() &&
         !info.slurm_job.empty();
}

namespace {

// The first IPv4 address of rank 0's node; throws naming it.
std::string node_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || res == nullptr)
    throw std::runtime_error("cannot resolve rank 0's node " + host +
                             " to an IPv4 address: " + (rc != 0 ? gai_strerror(rc) : "no address"));
  char ip[INET_ADDRSTRLEN] = "";
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, ip, sizeof ip);
  ::freeaddrinfo(res);
  return ip;
}

}  // namespace

SlurmStore open_slurm_store(const RankInfo& info, std::chrono::milliseconds timeout) {
  if (!munge_available())
    throw std::runtime_error(
        "srun started the ranks without MPI and this ./train was built without libmunge, "
        "which its Gloo rendezvous under srun needs (install libmunge-dev and rebuild, use "
        "srun --mpi=pmix, or pass --rendezvous-dir DIR)");
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
  SlurmStore s;
  MungeStoreTarget target{plan.rank0_node, node_ipv4(plan.rank0_node), plan.ports, plan.step_payload,
                          info.munge_socket};
  if (info.rank == 0) {
    MungeStoreServer::Config c;
    c.bind_addr = target.addr;
    c.ports = plan.ports;
    c.step_payload = plan.step_payload;
    c.munge_socket = info.munge_socket;
    c.auth_timeout = timeout;
    s.server.reset(new MungeStoreServer(c));
    target.ports = {s.server->port()};  // rank 0 knows which one it got
  }
  std::string where;
  const int fd = munge_store_connect(target, timeout, &where);
  s.client.reset(new StoreClient(fd, where, timeout));
  s.where = "rank 0's MUNGE store at " + where;
  return s;
}
