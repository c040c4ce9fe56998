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

// Runs one numbered step of an algorithm over T elements: comm.exchange, then observer->on_step
// (when there is an observer and something moved) with the step's times and CPU clocks. count 0 or peer -1: that side is idle.
template <typename T>
class Steps {
 public:
  Steps(Communicator& comm, AllreduceObserver* observer) : comm_(comm), observer_(observer) {}
  void run(int step, const char* phase, const T* send, size_t send_count, int send_peer, T* recv, size_t recv_count,
           int recv_peer) {
    if (send_count == 0) send_peer = -1;
    if (recv_count == 0) recv_peer = -1;
    if (send_peer == -1 && recv_peer == -1) return;
    const CpuTimes cpu = observer_ ? thread_cpu_times() : CpuTimes{};
    const int64_t begin = observer_ ? now_ns() : 0;
    comm_.exchange(send, send_count * sizeof(T), send_peer, recv, recv_count * sizeof(T), recv_peer);
    if (!observer_) return;
    const int64_t end = now_ns();
    const CpuTimes cpu_end = thread_cpu_times();
    AllreduceStep s;
    s.step = step;
    s.phase = phase;
    s.send_peer = send_peer;
    s.recv_peer = recv_peer;
    s.send_bytes = send_peer == -1 ? 0 : send_count * sizeof(T);
    s.recv_bytes = recv_peer == -1 ? 0 : recv_count * sizeof(T);
    s.begin_ns = begin;
    s.end_ns = end;
    s.on_cpu_ns = cpu_end.on_cpu_ns - cpu.on_cpu_ns;
    s.run_delay_ns = cpu_end.run_delay_ns - cpu.run_delay_ns;
    observer_->on_step(s);
  }

 private:
  Communicator& comm_;
  AllreduceObserver* observer_;
};

// The algorithms (in place over all ranks; every rank ends with the same bits). n may be 0.
void direct_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer);
void direct_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer);
void ring_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer);
void ring_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer);
void halving_doubling_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer);
void halving_doubling_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer);

}  // namespace allreduce_detail
