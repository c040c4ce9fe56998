// allreduce: the algorithms that sum a vector over all ranks (chosen with ./train --allreduce),
// and the observer through which a timeline sees every step of them: peer, bytes and time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/communicator.h"

enum class AllreduceAlgorithm {
  kAuto,             // the backend's own default (what the communicator's allreduce_sum does)
  kDirect,           // every rank sends its whole vector to every other rank, then sums locally
  kRing,             // ours: reduce-scatter then allgather around the ring r -> r+1
  kHalvingDoubling,  // ours: recursive vector halving with distance doubling, then the reverse
  kGloo,             // Gloo's own allreduce (its ring / bcube choice)
  kMpi,              // MPI_Allreduce
  kAdasum,           // not an --allreduce choice: Horovod's Adasum (--use-adasum), named to observers
};

// --allreduce names: "auto", "direct", "ring", "halving-doubling", "gloo", "mpi".
// Throws std::invalid_argument("unknown --allreduce 'x' (valid: auto, direct, ...)").
AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name);
const char* allreduce_algorithm_name(AllreduceAlgorithm a);
// "" when a can run over backend ("single", "gloo", "mpi") at world_size; else a one-line reason.
std::string allreduce_unsupported_reason(AllreduceAlgorithm a, const std::string& backend, int world_size);

// One step of one of our algorithms on this rank. At a given (call, step) the rank that sends to
// peer p and the rank p that receives from it report the same call and step, so a timeline can
// join the two ends with one flow arrow.
struct AllreduceStep {
  int step;                       // 0, 1, ... within the call, the same numbering on every rank
  const char* phase;              // "reduce-scatter", "allgather", "exchange", "fold", "unfold"
                                  // (Adasum's levels: "reduce-scatter" combines, "allgather" copies)
  int send_peer, recv_peer;       // -1: nothing sent / received in this step
  size_t send_bytes, recv_bytes;  // bytes on the wire in each direction
  int64_t begin_ns, end_ns;       // std::chrono::steady_clock on this rank, nanoseconds
  // The thread's CPU time and time runnable without a CPU over the step (comm/thread_cpu_clock.h):
  // on_cpu + run_delay <= end - begin, the rest it slept waiting for the peer's bytes.
  int64_t on_cpu_ns = 0, run_delay_ns = 0;
  // Which piece of the vector moved. At this step the algorithm has cut the vector of n elements
  // into `parts` pieces; piece send_chunk, elements [send_lo, send_hi), went to send_peer and
  // piece recv_chunk, [recv_lo, recv_hi), came from recv_peer (-1: that side is idle). Ring:
  // parts = W, chunk c of allreduce_ring.cc; halving-doubling: the halves (parts 2), quarters
  // (4), ... of its levels; fold, unfold and the direct exchange: the whole vector (parts 1).
  int parts = 0;
  int send_chunk = -1, recv_chunk = -1;
  size_t send_lo = 0, send_hi = 0, recv_lo = 0, recv_hi = 0;
  size_t elements = 0;  // n, the length of the vector being summed
};

// Sees every allreduce call (begin/end) and, for our own algorithms, every step. Calls are
// numbered by the observer itself: every rank makes the same calls in the same order.
class AllreduceObserver {
 public:
  virtual ~AllreduceObserver() = default;
  virtual void on_call_begin(AllreduceAlgorithm a, size_t bytes, int64_t begin_ns) = 0;
  virtual void on_step(const AllreduceStep& s) = 0;
  virtual void on_call_end(int64_t end_ns) = 0;
};

// data (n) = the element-wise sum over all ranks of data, in place, by algorithm a; every rank
// ends with the same bits. observer may be null. Throws std::runtime_error like the backends.
void allreduce_sum(Communicator& comm, AllreduceAlgorithm a, float* data, size_t n, AllreduceObserver* observer);
// The same over IEEE halves (summed in float, rounded to half after each addition).
void allreduce_sum_f16(Communicator& comm, AllreduceAlgorithm a, half_bits* data, size_t n,
                       AllreduceObserver* observer);
