// emulated_link: --link-delay and --link-bandwidth, a slow network a learner can turn on without
// root (tests/netns_hosts.sh needs root and namespaces). A Communicator that passes every call to
// the real one and holds each message that exchange() receives -- the call our ring,
// halving-doubling and direct allreduces make for every step -- for delay + bytes / rate after
// it arrived, as a link with that latency and rate would deliver it later.
//
// It is an emulation, in user space: the real bytes still move at loopback speed; the receiving
// rank then sleeps. What it does not delay: Gloo's and MPI's own collectives (allreduce_sum with
// --allreduce auto, gloo or mpi, broadcast, allgather, barrier: the start-up broadcast, --metrics'
// gathers), sendrecv (the clock sync), --overlap on's bucket channels, and a step that only sends
// (its receiver holds the message instead). Since the hold follows the real delivery, a step
// takes the real step's time plus delay + bytes / rate: never less (docs/internals.md).
#pragma once
#include <cstdint>
#include <memory>

#include "comm/communicator.h"

struct LinkEmulation {
  double delay_s = 0;      // --link-delay
  double bytes_per_s = 0;  // --link-bandwidth (0: no bandwidth limit)
  bool active() const { return delay_s > 0 || bytes_per_s > 0; }
  // How long a message of `bytes` is held: delay + bytes / rate.
  double hold_s(size_t bytes) const { return delay_s + (bytes_per_s > 0 ? double(bytes) / bytes_per_s : 0); }
};

// real, wrapped so that exchange() holds each received message (link.active()), else real itself.
std::unique_ptr<Communicator> emulate_link(std::unique_ptr<Communicator> real, const LinkEmulation& link);
