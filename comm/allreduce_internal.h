// allreduce_internal: what the allreduce algorithms (comm/allreduce_*.cc) share: one timed and
// observed exchange step, the element sums of both storage types, and the algorithms' entry points.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "comm/allreduce.h"
#include "comm/communicator.h"
#include "comm/half_float.h"
#include "comm/thread_cpu_clock.h"

namespace allreduce_detail {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// acc[i] = acc[i] + in[i]: float adds, halves add in float and round to half (the wire contract).
inline void add_into(float* acc, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) acc[i] += in[i];
}
inline void add_into(half_bits* acc, const half_bits* in, size_t n) {
  for (size_t i = 0; i < n; ++i) acc[i] = float_to_half(half_to_float(acc[i]) + half_to_float(in[i]));
}

// A piece of the vector an algorithm moves in one step: elements [lo, hi), which is piece `chunk`
// of however many the algorithm cut the vector into at that step (-1: nothing).
struct Piece {
  size_t lo = 0, hi = 0;
  int chunk = -1;
  size_t count() const { return hi - lo; }
};

// Runs one numbered step of an algorithm over the vector `data` of n elements of T: sends piece
// `send` (from data) to send_peer while receiving piece `recv` from recv_peer, into recv_into
// (a scratch buffer the caller then adds) or, when that is null, straight into data at recv.lo.
// Then observer->on_step (when there is an observer and something moved) with the step's times and
// CPU clocks. An empty piece or peer
// -1: that side is idle. parts: how many pieces the vector is cut into at this step.
template <typename T>
class Steps {
 public:
  Steps(Communicator& comm, AllreduceObserver* observer, T* data, size_t n)
      : comm_(comm), observer_(observer), data_(data), n_(n) {}
  void run(int step, const char* phase, int parts, Piece send, int send_peer, Piece recv, int recv_peer,
           T* recv_into = nullptr) {
    if (send.count() == 0) send_peer = -1;
    if (recv.count() == 0) recv_peer = -1;
    if (send_peer == -1 && recv_peer == -1) return;
    const CpuTimes cpu = observer_ ? thread_cpu_times() : CpuTimes{};
    T* into = recv_into ? recv_into : data_ + recv.lo;
    const int64_t begin = observer_ ? now_ns() : 0;
    comm_.exchange(data_ + send.lo, send.count() * sizeof(T), send_peer, into, recv.count() * sizeof(T), recv_peer);
    if (!observer_) return;
    const int64_t end = now_ns();
    const CpuTimes cpu_end = thread_cpu_times();
    AllreduceStep s{};
    s.step = step;
    s.phase = phase;
    s.send_peer = send_peer;
    s.recv_peer = recv_peer;
    s.send_bytes = send_peer == -1 ? 0 : send.count() * sizeof(T);
    s.recv_bytes = recv_peer == -1 ? 0 : recv.count() * sizeof(T);
    s.begin_ns = begin;
    s.end_ns = end;
    s.on_cpu_ns = cpu_end.on_cpu_ns - cpu.on_cpu_ns;
    s.run_delay_ns = cpu_end.run_delay_ns - cpu.run_delay_ns;
    s.parts = parts;
    if (send_peer != -1) {
      s.send_chunk = send.chunk;
      s.send_lo = send.lo;
      s.send_hi = send.hi;
    }
    if (recv_peer != -1) {
      s.recv_chunk = recv.chunk;
      s.recv_lo = recv.lo;
      s.recv_hi = recv.hi;
    }
    s.elements = n_;
    observer_->on_step(s);
  }

 private:
  Communicator& comm_;
  AllreduceObserver* observer_;
  T* data_;
  size_t n_;
};

// The algorithms (in place over all ranks; every rank ends with the same bits). n may be 0.
void direct_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer);
void direct_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer);
void ring_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer);
void ring_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer);
void halving_doubling_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer);
void halving_doubling_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer);

}  // namespace allreduce_detail
