// stop_agreement: the ranks agree, at a step boundary, whether to stop for a signal (SIGTERM or
// SIGUSR1, src/stop_signal.h) that any of them received: one allreduce of two numbers (how many
// ranks saw each signal), so a rank that saw nothing stops at the same step as one that did, and
// ranks that saw the signal at different steps all stop at the first boundary after the earliest.
//
// Cost: one small allreduce every kStopVoteEvery steps on W > 1 ranks (16 bytes: on Gloo one
// direct exchange, one latency; MPI_Allreduce under --mpi), none on one rank. Every step it was a
// new point where all ranks wait for the slowest: on 2 loaded cores its median was about the
// gradient allreduce's own (2026-12-07, 2 ranks: 288 us against 255 us, steps of 2-7 ms). Every 8th
// step it costs an eighth of that, and a stop comes at most 7 steps (tens of milliseconds) later.
// It cannot ride on the gradient's allreduce: that one is averaged, maybe in fp16, in overlapped
// buckets or by Adasum, and its bytes must stay the bytes Horovod sums.
#pragma once
#include "comm/communicator.h"

struct StopVote {
  int signal = 0;  // the agreed stop signal (SIGTERM when any rank saw it, else SIGUSR1), or 0
  int ranks = 0;   // how many ranks had received it
  int exit_code() const { return signal ? 128 + signal : 0; }
};

// The ranks vote before the steps that are multiples of this (step 0 included), all at the same
// steps; a signal waits for the next of them.
constexpr long long kStopVoteEvery = 8;
inline bool is_stop_vote_step(long long step) { return step % kStopVoteEvery == 0; }

// Pure: the vote from the summed counts {ranks that saw SIGTERM, ranks that saw SIGUSR1}.
StopVote stop_vote_of(double term_ranks, double usr1_ranks);

// Every rank, at the same step boundary: this rank's received signal (0: none) against the
// others'. A collective on W > 1 ranks.
StopVote agree_on_stop(Communicator& comm, int received);
