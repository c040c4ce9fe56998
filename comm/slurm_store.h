// slurm_store: the rendezvous of srun's tasks over Gloo with nothing shared but Slurm (the I/O
// around comm/slurm_store_plan.h): rank 0 serves a MUNGE-authenticated store
// (comm/munge_store_server.h) on the address its node name resolves to, at the first free port
// of the job step's sequence, and every rank, rank 0 too, connects to it as a client
// (comm/munge_store_client.h). munged is reached at RankInfo::munge_socket (BARESGD_MUNGE_SOCKET,
// else libmunge's default socket).
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/munge_store_server.h"
#include "comm/store_client.h"

struct SlurmStore {
  std::unique_ptr<MungeStoreServer> server;  // rank 0 only
  std::unique_ptr<StoreClient> client;
  std::string where;  // "rank 0's MUNGE store at node:port"
};

// True when this process is one of srun's tasks whose Gloo rendezvous is the Slurm store.
bool uses_slurm_store(const RankInfo& info);
// Serves (rank 0) and connects within timeout. Throws std::runtime_error with one line.
SlurmStore open_slurm_store(const RankInfo& info, std::chrono::milliseconds timeout);
