// allreduce_bytes: how many bytes one rank sends and receives in one gradient allreduce, for
// --inspect and --metrics. Two sources, always named beside the numbers:
//   "observer": counted from the steps an AllreduceObserver saw (our own --allreduce algorithms
//               report every send and receive);
//   "model":    the known cost of what the backend does by default (no observer, or an
//               algorithm that reports no steps: Gloo's, MPI's).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/allreduce.h"

struct AllreduceBytes {
  uint64_t sent = 0, received = 0;
  std::string source;  // "model" or "observer"
  std::string how;     // one line: what was counted or modelled
};

// The backend default's cost on this rank for one fused allreduce of `payload_bytes` (n elements
// of elem_bytes each; elem_bytes is 2 with --fp16-allreduce):
//   single, or 1 rank:  nothing moves;
//   gloo, --allreduce auto: direct exchange while (W-1) * bytes <= 1 MiB (comm/backend_gloo.cc):
//         (W-1) * bytes each way; else Gloo's ring: 2 (W-1)/W * bytes each way;
//   gloo, --allreduce gloo: gloo::allreduce with no algorithm named, which is Gloo's ring at every
//         size: 2 (W-1)/W * bytes each way;
//   mpi:  MPI_Allreduce picks its own algorithm, which we cannot see: the ring's 2 (W-1)/W * bytes
//         (the bandwidth-optimal cost) as the estimate, and `how` says so;
//   adasum (any backend): vector halving then doubling over log2 W levels, each level sending the
//         half given away (our sendrecv pads odd halves by one element), both ways; the small
//         per-level dot-product allreduces are left out and `how` says so.
// `algorithm` is the --allreduce name ("auto", "gloo", "mpi"; our own algorithms report their
// steps and are counted instead).
AllreduceBytes modelled_allreduce_bytes(const std::string& backend, const std::string& algorithm, int world_size,
                                        int rank, size_t n, size_t elem_bytes, bool adasum);

// bytes * part / whole, rounded down: one layer's share of a fused buffer's traffic.
uint64_t share_of(uint64_t bytes, size_t part, size_t whole);

// An AllreduceObserver that sums the bytes of every step it sees and passes everything on to
// `next` (may be null), so it can sit in front of a timeline's observer.
class ByteCountingObserver : public AllreduceObserver {
 public:
  explicit ByteCountingObserver(AllreduceObserver* next = nullptr) : next_(next) {}
  void reset() { sent_ = received_ = steps_ = 0; }
  void set_next(AllreduceObserver* next) { next_ = next; }
  uint64_t sent() const { return sent_; }
  uint64_t received() const { return received_; }
  uint64_t steps() const { return steps_; }  // 0: the algorithm reported no steps (use the model)
  void on_call_begin(AllreduceAlgorithm a, size_t bytes, int64_t begin_ns) override;
  void on_step(const AllreduceStep& s) override;
  void on_call_end(int64_t end_ns) override;

 private:
  AllreduceObserver* next_;
  uint64_t sent_ = 0, received_ = 0, steps_ = 0;
};
