// fd_limit: ./launch's open-file budget. The launcher holds about four descriptors per rank for the
// whole job (the rank's stdout and stderr pipes, its process handle, its connection to the
// rendezvous store) plus a few dozen of its own; a login's default soft limit (1024) stops a job of
// some 250 ranks half way through start-up. So at start ./launch raises its soft RLIMIT_NOFILE to
// the hard limit, and when even the hard limit is below what the job needs it refuses before
// starting anything, naming the limit and the need.
#pragma once
#include <string>

constexpr long kFdsPerRank = 4;  // measured: 2.7 with the ranks' pipes alone, +1 for the store
constexpr long kFdsOwn = 32;     // the launcher's own: store listener, signal pipe, ssh, logs

// The descriptors a job of `ranks` ranks needs.
long fds_needed(int ranks);

// The one-line refusal when `hard` cannot hold `need` ("" when it can). Pure.
std::string fd_limit_refusal(int ranks, long need, long hard);

// Raises the soft limit to the hard one; returns fd_limit_refusal for this process's hard limit.
std::string raise_fd_limit(int ranks);
