// allreduce_halving_doubling: our recursive halving-doubling allreduce (--allreduce
// halving-doubling, Rabenseifner's algorithm) over Communicator::exchange, for any world size.
//
// How it works. Let P be the largest power of two <= W. The P ranks 0..P-1 do the butterfly;
// the W-P others take part through a partner:
//   Fold (step 0, only when W > P): rank P+i sends its whole vector to rank i, which adds it.
//   Reduce-scatter (log2 P steps, distance doubling, vector halving): at distance d = 1, 2, 4, ...
//     rank r pairs with r^d; their common region [lo, hi) (at first the whole vector) is cut at
//     lo + (hi-lo)/2, the rank without bit d keeps the lower half, the other the upper half; each
//     sends the half it gives up and adds the peer's copy of the half it keeps. After the last
//     level rank r holds the full sum of 1/P of the vector.
//   Allgather (log2 P steps, the same levels in reverse, d = P/2, ..., 1): each rank sends the
//     region it finished and receives the peer's, so the regions double back to the whole vector.
//   Unfold (last step, only when W > P): rank i sends the result to rank P+i.
// Element k is summed as a fixed tree: pairs (v_i + v_(P+i)) first, then level by level (d = 1:
// v_r + v_(r^1), d = 2: (v_0+v_1) + (v_2+v_3), ...); float addition is commutative, so both ranks of
// a pair compute the same bits, and the allgather only copies: every rank ends with the same bits.
// Cost for a power of two: 2 log2 W steps; every rank sends (and receives) N/2 + N/4 + ... + N/W
// elements in each phase, 2(W-1)/W * N * sizeof(element) bytes in all, like the ring, in
// log2 W instead of W-1 steps per phase, but with large messages to distant ranks first. Otherwise
// two more steps, in which ranks 0..W-P-1 and P..W-1 also move the whole vector (N*sizeof(element)
// bytes) each way while the other ranks wait: e.g. W=6 is P=4 plus a fold and an unfold.
#include <vector>

#include "comm/allreduce_internal.h"

namespace allreduce_detail {
namespace {

// One reduce-scatter level of this rank: its peer, the region it kept and the half it gave away.
// At level j (distance d = 2^j) the vector is cut into 2^(j+1) pieces; `parts` counts them, and
// a piece's chunk is its index among them (region i at one level splits into 2i and 2i+1).
struct Level {
  int peer, parts;
  Piece keep, give;
};

template <typename T>
void halving_doubling(Communicator& comm, T* data, size_t n, AllreduceObserver* observer) {
  const int w = comm.size(), r = comm.rank();
  if (n == 0 || w == 1) return;
  int p = 1;
  while (p * 2 <= w) p *= 2;
  const bool folds = w > p;
  const Piece whole{0, n, 0}, nothing{};
  thread_local std::vector<T> incoming;
  Steps<T> steps(comm, observer, data, n);
  int step = 0;

  if (folds) {  // step 0: ranks p.. hand their vector to ranks 0..w-p-1
    if (r >= p) {
      steps.run(step, "fold", 1, whole, r - p, nothing, -1);
    } else if (r < w - p) {
      incoming.resize(n);
      steps.run(step, "fold", 1, nothing, -1, whole, r + p, incoming.data());
      add_into(data, incoming.data(), n);
    }
    ++step;
  }
  int levels_count = 0;
  for (int d = 1; d < p; d <<= 1) ++levels_count;

  if (r < p) {
    incoming.resize(n - n / 2);
    std::vector<Level> levels;
    Piece region = whole;
    int parts = 1;
    for (int d = 1; d < p; d <<= 1) {  // reduce-scatter: halve the region, keep one half
      const int peer = r ^ d;
      const size_t mid = region.lo + region.count() / 2;
      const Piece lower{region.lo, mid, 2 * region.chunk}, upper{mid, region.hi, 2 * region.chunk + 1};
      parts *= 2;
      const bool keeps_lower = (r & d) == 0;
      const Piece keep = keeps_lower ? lower : upper, give = keeps_lower ? upper : lower;
      steps.run(step++, "reduce-scatter", parts, give, peer, keep, peer, incoming.data());
      add_into(data + keep.lo, incoming.data(), keep.count());
      levels.push_back(Level{peer, parts, keep, give});
      region = keep;
    }
    for (auto it = levels.rbegin(); it != levels.rend(); ++it)  // allgather: the same levels back
      steps.run(step++, "allgather", it->parts, it->keep, it->peer, it->give, it->peer);
  } else {
    step += 2 * levels_count;
  }

  if (folds) {  // last step: the result goes back to ranks p..
    if (r >= p)
      steps.run(step, "unfold", 1, nothing, -1, whole, r - p);
    else if (r < w - p)
      steps.run(step, "unfold", 1, whole, r + p, nothing, -1);
  }
}

}  // namespace

void halving_doubling_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer) {
  halving_doubling(comm, data, n, observer);
}
void halving_doubling_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer) {
  halving_doubling(comm, data, n, observer);
}

}  // namespace allreduce_detail
