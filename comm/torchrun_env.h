// torchrun_env: who this process is when PyTorch's torchrun (torch.distributed.run) started it.
// torchrun's agent gives every worker RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR and MASTER_PORT (and TORCHELASTIC_RUN_ID); the ranks meet in the c10d TCPStore at
// MASTER_ADDR:MASTER_PORT, which the agent serves when TORCHELASTIC_USE_AGENT_STORE=True (static
// rendezvous) and the worker of rank 0 serves otherwise (--standalone, --rdzv_backend c10d).
// Pure: reads through a lookup, writes a RankInfo.
#pragma once
#include "comm/comm_internal.h"
#include "comm/communicator.h"

// True when the environment looks like torchrun's (RANK, WORLD_SIZE or LOCAL_RANK is set).
bool torchrun_env_present(const EnvLookup& get);

// Fills r (source "torchrun", backend "gloo", c10d_store_addr = MASTER_ADDR:MASTER_PORT,
// c10d_store_on_rank0 unless TORCHELASTIC_USE_AGENT_STORE=True; any value but True or False is an
// error).
// Throws std::runtime_error with one line naming the variables and their values when they are
// missing, not integers, or inconsistent (RANK >= WORLD_SIZE, LOCAL_RANK >= LOCAL_WORLD_SIZE, ...).
void read_torchrun_env(const EnvLookup& get, RankInfo* r);
