// comm_internal: what the backends and the factory share inside comm/ (not part of the public API;
// tests use it to run backends in-process and to feed rank discovery a fake environment).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include "comm/communicator.h"

// Looks up one environment variable; nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

// discover_rank_info() over an arbitrary environment (the public one passes ::getenv).
// cross_rank/cross_size are -1 when the environment does not say (Open MPI, or a launcher that
// left them out); the backend then computes them after connecting (ranks grouped by local rank).
RankInfo discover_rank_info(const EnvLookup& env);

// Backend constructors. Each throws std::runtime_error with a one-line message on failure.
std::unique_ptr<Communicator> make_single_communicator(const RankInfo& info);
#if BARESGD_HAVE_GLOO
std::unique_ptr<Communicator> make_gloo_communicator(const RankInfo& info, const CommOptions& opts);
#endif
#if BARESGD_HAVE_MPI
std::unique_ptr<Communicator> make_mpi_communicator(const RankInfo& info, const CommOptions& opts);
#endif

// Fills info->cross_rank / cross_size from every rank's local rank (index = rank): the cross group
// of a rank is the ranks sharing its local rank, ordered by rank (= MPI_Comm_split(local_rank)).
void assign_cross_ranks(RankInfo* info, const std::vector<int>& local_rank_of_rank);

// "rank 3" or "rank 3 (host hpc01)" for error messages.
std::string describe_rank(const RankInfo& info);

// Throws std::invalid_argument unless 0 <= peer < size.
void check_peer(const RankInfo& info, int peer, const char* op);

// True when [a, a + an) and [b, b + bn) share a byte (empty ranges never do).
bool ranges_overlap(const void* a, size_t an, const void* b, size_t bn);

// What every backend's sendrecv does before it talks: checks the peer (throws std::invalid_argument),
// finishes the call itself for 0 bytes or peer == self (returns nullptr), and otherwise returns the
// buffer to send from: `send`, or its copy in *scratch when it overlaps `recv`.
const void* sendrecv_prologue(const RankInfo& info, const void* send, void* recv, size_t bytes, int peer,
                              std::vector<uint8_t>* scratch);

// What every backend's exchange does before it talks: checks both peers (-1 = none; throws
// std::invalid_argument), turns a side with 0 bytes into none (peer -1), finishes a self-exchange
// (send_peer == recv_peer == rank, equal sizes) itself, and points *send at a copy in *scratch when
// it overlaps recv. Returns false when nothing is left to send or receive.
bool exchange_prologue(const RankInfo& info, const void** send, size_t send_bytes, int* send_peer, void* recv,
                       size_t recv_bytes, int* recv_peer, std::vector<uint8_t>* scratch);
