// gloo_sync_lane: a second Gloo full mesh whose pairs are in Gloo's sync mode, for the gradient's
// exchange. The rank's own thread writes its bytes onto each peer's socket and reads the peers'
// bytes out of them itself (Gloo's device thread never touches these sockets), so the exchange
// moves exactly when the rank is in it, whatever the other cores run, with no hand-over between
// threads. Used by comm/backend_gloo.cc; docs/comm.md.
//
// A Region is size * bytes of memory, rank p's part at p * bytes, that the ranks exchange in
// rounds: send_own() writes this rank's part to every peer (a blocking write that the socket
// buffers always absorb: open_region refuses a region when the bytes in flight to one peer could
// exceed them), receive() reads every peer's part. Every rank opens the same regions in the same
// order, and in a round sends every region before it receives any.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/spin_choice.h"

namespace gloo {
namespace rendezvous {
class Context;
}
namespace transport {
class Buffer;
}
}  // namespace gloo

class GlooSyncLane {
 public:
  // Takes a connected mesh (comm/gloo_mesh, its context's transport timeout being the one on every
  // blocking read and write) and puts its pairs in sync mode. busy_poll: a wait spins on the socket
  // instead of sleeping in the kernel (for a rank that has a core of its own).
  GlooSyncLane(std::shared_ptr<gloo::rendezvous::Context> mesh, int rank, int size, bool busy_poll);
  ~GlooSyncLane();

  // Whether `total` bytes written to one peer before it reads any, in messages of at most
  // `largest`, always fit in the sockets: Gloo sizes a pair's send buffer to its largest message
  // (capped by net.core.wmem_max), and the peer's receive window holds at least half of
  // tcp_rmem's default. Then two ranks that write at once never wait for each other's reads.
  static bool fits(size_t total, size_t largest, size_t wmem_max, size_t rmem_default);

  class Region {
   public:
    ~Region();
    uint8_t* part(int rank) { return all_.data() + size_t(rank) * bytes_; }
    const uint8_t* all() const { return all_.data(); }
    size_t bytes() const { return bytes_; }
    // Writes this rank's part to every peer, then reads every peer's part; before each write and
    // each blocking read, peer(p) says whom it is dealing with (for the error's message).
    void send_own(const std::function<void(int peer)>& peer);
    void receive(const std::function<void(int peer)>& peer);

   private:
    friend class GlooSyncLane;
    Region(GlooSyncLane* lane, int slot, size_t bytes);
    GlooSyncLane* lane_;
    const size_t bytes_;
    std::vector<uint8_t> all_;
    std::vector<std::unique_ptr<gloo::transport::Buffer>> send_, recv_;  // per peer (own rank: none)
  };

  // A new region of `bytes` per rank, or nullptr when its bytes and those of the regions opened
  // before it would not fit (then the caller takes Gloo's ordinary path).
  std::unique_ptr<Region> open_region(size_t bytes);

 private:
  // A region's receive is over; preempted: its thread was switched out involuntarily meanwhile.
  void after_round(bool preempted);

  const int rank_, size_;
  SpinChoice spin_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  int next_slot_ = 1;
  size_t opened_bytes_ = 0, largest_ = 0;  // over the regions opened so far
};
