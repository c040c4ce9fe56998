// clock_sync: each rank's steady_clock offset to rank 0's, measured by ping-pong over the
// communicator's sendrecv, for putting every rank's timeline events on one clock; and, from the
// same ping-pong, the alpha-beta model's alpha (one message's latency) and beta (time per byte).
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.h"

struct ClockSync {
  std::vector<int64_t> offset_ns;    // per rank: its clock minus rank 0's (rank 0: 0)
  std::vector<int64_t> bound_ns;     // per rank: |error| of offset_ns is at most this (rtt / 2)
  int64_t origin_ns = 0;             // rank 0's clock when the measurement ended
  double alpha_us = 0;               // mean over the peers of the best 8-byte exchange's time
  double beta_us_per_byte = 0;       // mean over the peers of (best kBetaBytes exchange - alpha) / bytes
  int64_t begin_ns = 0, end_ns = 0;  // this rank's clock: when the sync began and ended
};

// The payload of the exchanges that measure beta: big enough that bytes, not latency, dominate.
constexpr size_t kBetaBytes = size_t(1) << 16;

// Collective. Rank 0 and each rank r in turn, `rounds` times: rank 0 notes t0 and sends a ping;
// r notes t_r when the ping has arrived and sends t_r back; rank 0 notes t1. t_r happened on
// rank 0's clock inside [t0, t1], so offset = t_r - (t0 + t1) / 2 is off by at most (t1 - t0) / 2;
// the round with the smallest t1 - t0 is kept. Each sendrecv is one exchange each way at once, so
// alpha = min (t1 - t0) / 2. Then `rounds` exchanges of kBetaBytes, each after an 8-byte one that
// lines the two ranks up: beta = (min time - alpha) / kBetaBytes (0 if that is negative). Rank 0
// then broadcasts the result to every rank.
// now: the clock (steady_clock ns), replaceable in tests.
ClockSync sync_clocks(Communicator& comm, int rounds, int64_t (*now)());

// The rounds the Trainer syncs with (--metrics and --timeline share one ClockSync), and its clock.
constexpr int kClockSyncRounds = 20;
int64_t steady_now_ns();
