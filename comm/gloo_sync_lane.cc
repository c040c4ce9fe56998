// gloo_sync_lane: the sync-mode Gloo mesh of the gradient's exchange (see gloo_sync_lane.h).
//
// Gloo's tcp pair in sync mode is unregistered from the device thread's epoll loop and its socket
// is blocking: Buffer::send writes the whole message in the calling thread, Buffer::waitRecv reads
// the next message in the calling thread (spinning with MSG_DONTWAIT when busy-polling), and both
// give up after the pair's timeout (SO_RCVTIMEO / SO_SNDTIMEO), which Gloo reports as a timeout.
// Only Gloo's slot-bound Buffers work on such a pair, so each region has one send and one receive
// Buffer per peer over its whole memory; a message carries its offset (roffset), so each peer's
// part lands at its place.
#include "comm/gloo_sync_lane.h"

#include <gloo/rendezvous/context.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/pair.h>

#include <signal.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <fstream>

namespace {

// While it lives, a write to a connection the peer closed fails with EPIPE (which Gloo reports as
// a broken pipe, and the communicator as a lost peer) instead of killing the process by SIGPIPE:
// the signal is blocked in this thread, and one it raised meanwhile is taken before the mask is
// restored. The process's own disposition is untouched (./train | head still ends ./train).
class SigpipeAsError {
 public:
  SigpipeAsError() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeAsError() {
    sigset_t pending;
    sigpending(&pending);
    if (!sigismember(&old_, SIGPIPE) && sigismember(&pending, SIGPIPE)) {
      const struct timespec now = {0, 0};
      sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
};

// A /proc/sys value's first number, or `fallback` when it cannot be read.
size_t proc_sys_number(const char* path, size_t fallback) {
  std::ifstream in(path);
  long long v = -1;
  if (!(in >> v) || v <= 0) return fallback;
  return static_cast<size_t>(v);
}

size_t host_wmem_max() { return proc_sys_number("/proc/sys/net/core/wmem_max", 212992); }

// tcp_rmem is "min default max": the second number.
size_t host_rmem_default() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_rmem");
  long long lo = -1, def = -1;
  if (!(in >> lo >> def) || def <= 0) return 131072;
  return static_cast<size_t>(def);
}

// Involuntary context switches of the calling thread so far.
long involuntary_switches() {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

}  // namespace

bool GlooSyncLane::fits(size_t total, size_t largest, size_t wmem_max, size_t rmem_default) {
  return total <= std::min(largest, wmem_max) + rmem_default / 2;
}

GlooSyncLane::GlooSyncLane(std::shared_ptr<gloo::rendezvous::Context> mesh, int rank, int size, bool busy_poll)
    : rank_(rank), size_(size), spin_(busy_poll), context_(std::move(mesh)) {
  for (int p = 0; p < size; ++p)
    if (p != rank) context_->getPair(p)->setSync(true, spin_.spinning());
}

void GlooSyncLane::after_round(bool preempted) {
  if (!spin_.after_round(preempted)) return;
  for (int p = 0; p < size_; ++p)  // setSync again only changes how the pair's reads wait
    if (p != rank_) context_->getPair(p)->setSync(true, spin_.spinning());
}

GlooSyncLane::~GlooSyncLane() = default;

std::unique_ptr<GlooSyncLane::Region> GlooSyncLane::open_region(size_t bytes) {
  const size_t total = opened_bytes_ + bytes, largest = std::max(largest_, bytes);
  if (!fits(total, largest, host_wmem_max(), host_rmem_default())) return nullptr;
  opened_bytes_ = total;
  largest_ = largest;
  return std::unique_ptr<Region>(new Region(this, next_slot_++, bytes));
}

GlooSyncLane::Region::Region(GlooSyncLane* lane, int slot, size_t bytes)
    : lane_(lane), bytes_(bytes), all_(bytes * size_t(lane->size_), 0) {
  send_.resize(lane->size_);
  recv_.resize(lane->size_);
  for (int p = 0; p < lane->size_; ++p) {
    if (p == lane->rank_) continue;
    auto& pair = lane->context_->getPair(p);
    recv_[p] = pair->createRecvBuffer(slot, all_.data(), all_.size());
    send_[p] = pair->createSendBuffer(slot, all_.data(), all_.size());
  }
}

// The send Buffers go first: a Buffer's destructor unregisters its slot from the pair, which is
// the receive Buffer's registration too.
GlooSyncLane::Region::~Region() {
  send_.clear();
  recv_.clear();
}

void GlooSyncLane::Region::send_own(const std::function<void(int peer)>& peer) {
  if (bytes_ == 0) return;
  const int sz = lane_->size_, r = lane_->rank_;
  const size_t at = size_t(r) * bytes_;
  SigpipeAsError no_signal;
  for (int k = 1; k < sz; ++k) {
    const int to = (r + k) % sz;
    peer(to);
    gloo::transport::Buffer* out = send_[to].get();
    out->send(at, bytes_, at);
    out->waitSend();  // complete already: a sync-mode send returns when its bytes are in the socket
  }
}

void GlooSyncLane::Region::receive(const std::function<void(int peer)>& peer) {
  if (bytes_ == 0) return;
  const int sz = lane_->size_, r = lane_->rank_;
  const bool watch = lane_->spin_.allowed();  // a rank that never spins needs no preemption count
  const long switches = watch ? involuntary_switches() : 0;
  for (int k = 1; k < sz; ++k) {
    const int from = (r + sz - k) % sz;
    peer(from);
    recv_[from]->waitRecv();
  }
  if (watch) lane_->after_round(involuntary_switches() != switches);
}
