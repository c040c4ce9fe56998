// allreduce_bytes: the per-rank traffic model of the backends' default allreduce and of Adasum,
// and the observer that counts what our own algorithms really send.
#include "src/allreduce_bytes.h"

namespace {

// comm/backend_gloo.cc's BARESGD_GLOO_DIRECT_MAX_BYTES default: direct exchange up to here.
constexpr uint64_t kGlooDirectMaxBytes = uint64_t(1) << 20;

uint64_t ring_bytes(uint64_t bytes, int w) { return 2 * uint64_t(w - 1) * bytes / uint64_t(w); }

// comm/gradient_averaging.cc's adasum_vhdd: the same regions, walked for this rank.
uint64_t adasum_bytes(int world_size, int rank, size_t n, size_t elem_bytes) {
  uint64_t total = 0;
  size_t lo = 0, hi = n;
  for (int d = 1; d < world_size; d <<= 1) {
    const size_t count = hi - lo, mid = lo + count / 2, big = count - count / 2;
    total += 2 * uint64_t(big) * elem_bytes;  // sent at this level, and again when rebuilding
    const bool left = (rank & d) == 0;
    if (left)
      hi = mid;
    else
      lo = mid;
  }
  return total;
}

}  // namespace

uint64_t share_of(uint64_t bytes, size_t part, size_t whole) {
  if (whole == 0) return 0;
  return uint64_t((unsigned __int128)bytes * part / whole);
}

AllreduceBytes modelled_allreduce_bytes(const std::string& backend, const std::string& algorithm, int world_size,
                                        int rank, size_t n, size_t elem_bytes, bool adasum) {
  AllreduceBytes b;
  b.source = "model";
  const uint64_t bytes = uint64_t(n) * elem_bytes;
  const std::string size = std::to_string(bytes) + "-byte fused buffer";
  if (world_size <= 1 || backend == "single") {
    b.how = "one rank: nothing sent";
    return b;
  }
  if (adasum) {
    b.sent = b.received = adasum_bytes(world_size, rank, n, elem_bytes);
    b.how = "Adasum vector halving/doubling of the " + size + " (per-level dot-product allreduces not counted)";
    return b;
  }
  const bool gloo_picks_direct = algorithm != "gloo" && uint64_t(world_size - 1) * bytes <= kGlooDirectMaxBytes;
  if (backend == "gloo" && gloo_picks_direct) {
    b.sent = b.received = uint64_t(world_size - 1) * bytes;
    b.how = "Gloo direct exchange of the " + size + ": (W-1) x bytes each way";
  } else if (backend == "gloo") {
    b.sent = b.received = ring_bytes(bytes, world_size);
    b.how = "Gloo ring over the " + size + ": 2(W-1)/W x bytes each way";
  } else {
    b.sent = b.received = ring_bytes(bytes, world_size);
    b.how = "MPI_Allreduce of the " + size + ": its algorithm is not visible, estimated as a ring, 2(W-1)/W x bytes";
  }
  return b;
}

void ByteCountingObserver::on_call_begin(AllreduceAlgorithm a, size_t bytes, int64_t begin_ns) {
  if (next_) next_->on_call_begin(a, bytes, begin_ns);
}

void ByteCountingObserver::on_step(const AllreduceStep& s) {
  if (s.send_peer >= 0) sent_ += s.send_bytes;
  if (s.recv_peer >= 0) received_ += s.recv_bytes;
  ++steps_;
  if (next_) next_->on_step(s);
}

void ByteCountingObserver::on_call_end(int64_t end_ns) {
  if (next_) next_->on_call_end(end_ns);
}
