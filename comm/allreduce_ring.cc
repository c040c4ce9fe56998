// allreduce_ring: our ring allreduce (--allreduce ring) over Communicator::exchange.
//
// How it works. The vector of N elements is cut into W chunks, one per rank: chunk c holds
// N/W elements, and the first N%W chunks one more (chunk c starts at c*(N/W) + min(c, N%W)).
// Every step each rank sends one chunk to its right neighbour r+1 and receives one from its left
// neighbour r-1, so all W links of the ring carry a chunk at the same time.
//   Reduce-scatter, steps 0..W-2: at step s rank r sends chunk (r-s) mod W and receives chunk
//     (r-s-1) mod W, which it adds to its own copy. A chunk travels once around the ring picking
//     up every rank's values, so after W-1 steps rank r holds the full sum of chunk (r+1) mod W.
//   Allgather, steps W-1..2W-3: at step W-1+s rank r sends chunk (r+1-s) mod W (a finished
//     one) and receives chunk (r-s) mod W, which it stores: after W-1 more steps every rank holds
//     every finished chunk.
// Chunk c is summed in the fixed order v_c + v_(c+1) + ... + v_(c-1) (each addition made by the rank
// receiving it); the allgather only copies, so every rank ends with the same bits, run after run.
// Cost: 2(W-1) steps, each waiting for the slower neighbour; every rank sends (and receives)
// 2(W-1)/W * N * sizeof(element) bytes, e.g. 2(W-1)/W * N*4 for floats: for W=4 and the 21,840-float
// MNIST gradient 131,040 bytes in 6 steps of ~21,840 bytes. The bytes per rank do not grow with W,
// the number of steps (latencies) does.
#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/allreduce_internal.h"

namespace allreduce_detail {
namespace {

// Chunk c of N elements over W ranks (the remainder goes to the first N%W chunks).
Piece chunk_of(size_t n, int w, int c) {
  const size_t base = n / size_t(w), extra = n % size_t(w), cc = size_t(c);
  const size_t lo = cc * base + std::min(cc, extra);
  return Piece{lo, lo + base + (cc < extra ? 1 : 0), c};
}

template <typename T>
void ring(Communicator& comm, T* data, size_t n, AllreduceObserver* observer) {
  const int w = comm.size(), r = comm.rank();
  if (n == 0 || w == 1) return;
  const int right = (r + 1) % w, left = (r + w - 1) % w;
  auto mod = [w](int x) { return ((x % w) + w) % w; };
  thread_local std::vector<T> incoming;
  incoming.resize(n / size_t(w) + 1);
  Steps<T> steps(comm, observer, data, n);
  for (int s = 0; s < w - 1; ++s) {  // reduce-scatter: receive into `incoming`, add it to our copy
    const Piece out = chunk_of(n, w, mod(r - s)), in = chunk_of(n, w, mod(r - s - 1));
    steps.run(s, "reduce-scatter", w, out, right, in, left, incoming.data());
    add_into(data + in.lo, incoming.data(), in.count());
  }
  for (int s = 0; s < w - 1; ++s) {  // allgather: a finished chunk lands in place
    const Piece out = chunk_of(n, w, mod(r + 1 - s)), in = chunk_of(n, w, mod(r - s));
    steps.run(w - 1 + s, "allgather", w, out, right, in, left);
  }
}

}  // namespace

void ring_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer) {
  ring(comm, data, n, observer);
}
void ring_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer) {
  ring(comm, data, n, observer);
}

}  // namespace allreduce_detail
