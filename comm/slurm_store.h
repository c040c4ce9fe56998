// slurm_store: the rendezvous of srun's tasks over Gloo with nothing shared but Slurm (the I/O
// around comm/slurm_store_plan.h): rank 0 serves a MUNGE-authenticated store
// (comm/munge_store_server.h) at the first free port of the job step's sequence, and every rank,
// rank 0 too, connects to it as a client (comm/munge_store_client.h). munged is reached at
// RankInfo::munge_socket (BARESGD_MUNGE_SOCKET, else libmunge's default socket).
//
// Where the store listens, the same rule on every task (no task can ask another):
//   - when the whole step runs on rank 0's node and an interface was chosen (--network-interface,
//     else GLOO_SOCKET_IFNAME; comm/interface_choice.h): that interface's address;
//   - else rank 0's node's NodeAddr, as Slurm knows it (`scontrol -o show node`,
//     comm/slurm_scontrol.h): the one address of that node every node can learn from Slurm (its
//     slurmd is reached there). The node's name is never resolved: it need not be in DNS or
//     /etc/hosts. An interface chosen on a step of several nodes then binds Gloo only, and rank 0
//     says so in its line.
// Rank 0 prints one line saying where it serves and why there.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/interface_choice.h"
#include "comm/munge_store_server.h"
#include "comm/store_client.h"

struct SlurmStore {
  std::unique_ptr<MungeStoreServer> server;  // rank 0 only
  std::unique_ptr<StoreClient> client;
  std::string where;      // "rank 0's MUNGE store at node:port"
  std::string node_addr;  // this task's node's NodeAddr as IPv4 ("" when scontrol was not asked)
};

// True when this process is one of srun's tasks whose Gloo rendezvous is the Slurm store.
bool uses_slurm_store(const RankInfo& info);
// Serves (rank 0) and connects within timeout. Throws std::runtime_error with one line.
SlurmStore open_slurm_store(const RankInfo& info, const InterfaceChoice& iface, std::chrono::milliseconds timeout);
