// clock_sync: each rank's steady_clock offset to rank 0's, measured by ping-pong over the
// communicator's sendrecv, for putting every rank's timeline events on one clock.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.h"

struct ClockSync {
  std::vector<int64_t> offset_ns;  // per rank: its clock minus rank 0's (rank 0: 0)
  std::vector<int64_t> bound_ns;   // per rank: |error| of offset_ns is at most this (rtt / 2)
  int64_t origin_ns = 0;           // rank 0's clock when the measurement ended
};

// Collective. Rank 0 and each rank r in turn, `rounds` times: rank 0 notes t0 and sends a ping;
// r notes t_r when the ping has arrived and sends t_r back; rank 0 notes t1. t_r happened on
// rank 0's clock inside [t0, t1], so offset = t_r - (t0 + t1) / 2 is off by at most (t1 - t0) / 2;
// the round with the smallest t1 - t0 is kept. Rank 0 then broadcasts the result to every rank.
// now: the clock (steady_clock ns), replaceable in tests.
ClockSync sync_clocks(Communicator& comm, int rounds, int64_t (*now)());

// The rounds the Trainer syncs with (--metrics and --timeline share one ClockSync), and its clock.
constexpr int kClockSyncRounds = 20;
int64_t steady_now_ns();
