// comm_split: the one definition of where a rank's gradient exchange time went, used alike by
// --metrics (wait_s, transfer_s, descheduled_s), --timeline (wait_us, transfer_us,
// descheduled_us) and ./report (docs/metrics.md "Where the exchange time goes"):
//
//   wait         waiting for the slowest rank: from this rank's arrival (the exchange's start,
//                on rank 0's clock) to the last rank's arrival. Whatever this rank did meanwhile
//                (slept on a socket, spun, or sat runnable without a CPU) it could not go on.
//   descheduled  held up by a rank without a CPU once every rank was there: the longest time any
//                rank of the exchange was runnable but without a CPU between the last arrival
//                and this rank's end (a ring or butterfly stalls when any of its ranks does, and
//                this rank then sleeps on its socket). A rank's run_delay is read at its
//                exchange's two ends only, so its share of a span is taken as run_delay x span /
//                wall (spread evenly).
//   transfer     moving bytes: the rest (sending, receiving, summing, and the time bytes spend
//                on the wire after every rank has arrived).
//
// The three never overlap and add up to the exchange's wall time. The last rank to arrive has
// wait 0, so when ranks outnumber cores its time without a CPU -- and the others' -- shows as
// descheduled, not as moving bytes. Beside them, measured and disjoint: on_cpu (the thread's CPU
// time: spinning inside wait, copying and summing inside transfer) and run_delay (its own), with
// on_cpu + run_delay <= wall (the rest the thread slept, on a socket or a --link-delay hold).
#pragma once
#include <cstdint>
#include <vector>

#include "comm/thread_cpu_clock.h"

// One exchange on one rank: begin and end on rank 0's clock (steady_clock ns minus the rank's
// offset, src/clock_sync.h), and the thread's CPU clocks over it (end minus begin).
struct CommSample {
  int64_t begin_ns = 0, end_ns = 0;
  int64_t on_cpu_ns = 0, run_delay_ns = 0;
};

struct CommSplit {
  int64_t wall_ns = 0, wait_ns = 0, transfer_ns = 0, descheduled_ns = 0;
  int64_t on_cpu_ns = 0;     // running on a CPU (inside transfer and wait: spinning, copying, summing)
  int64_t run_delay_ns = 0;  // runnable, waiting for a CPU, over the whole exchange
};

// The part of s's run_delay that fell between the last rank's arrival (latest_begin_ns: the largest
// begin_ns of this exchange over ranks) and until_ns, the run_delay taken as spread evenly over
// s's exchange: run_delay x (overlap of [latest, until] with s) / wall.
int64_t stall_until_ns(const CommSample& s, int64_t latest_begin_ns, int64_t until_ns);
// The split; stall_ns: the largest stall_until_ns(rank, latest, this rank's end) over the ranks.
CommSplit split_comm(const CommSample& s, int64_t latest_begin_ns, int64_t stall_ns);
// The split of every rank's sample of one exchange (one definition for --metrics and --timeline).
std::vector<CommSplit> split_exchange(const std::vector<CommSample>& ranks);

// The gradient exchange the Trainer just made on this thread (src/step_observer.cc samples it
// around every observer's begin/end of Stretch::kExchange when enabled): steady_clock ns, not yet
// on rank 0's clock. Observers read it in end(Stretch::kExchange).
void enable_exchange_sampling();  // by --metrics and --timeline; off, a step reads no CPU clock
bool exchange_sampling_enabled();
void exchange_sample_begin();
void exchange_sample_end();
const CommSample& last_exchange_sample();
