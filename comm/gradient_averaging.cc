// gradient_averaging: Horovod's gradient reduction semantics over one flat buffer.
//
// Average (Horovod op=Average: prescale 1/f, postscale f/size, both Python floats cast to float):
//   g = float(1/f) * g in float32, ONE allreduce_sum over the whole buffer, g = float(f/size) * g
//   (Horovod's ScaleBuffer on a float32 fusion buffer; a factor of exactly 1.0 is skipped).
//   fp16 (torch Compression.fp16, then the same ScaleBuffer on the half fusion buffer): g is
//   rounded to half, each half is multiplied by float(1/f) in float32 and rounded to half, the
//   halves are summed by ONE allreduce_sum_f16, multiplied by float(f/size) in float32 and
//   rounded to half, and widened back to float (decompress).
// Adasum (Horovod's AdasumMPI FusedAllreduce, vector-halving distance-doubling, power-of-two world):
//   level d = 1, 2, 4, ...: pair with rank ^ d; the lower rank keeps the first floor(c/2) elements
//   of the current region, the upper rank the rest; each sends the half it gives away and receives
//   the peer's copy of the half it keeps. Both now hold a = own vector and b = peer's vector on the
//   kept half. Per segment (one per layer tensor) the partial a.b, |left|^2 and |right|^2 are summed
//   over the 2d ranks that together hold the two vectors being combined (one allreduce of doubles
//   per level, every group in its own slots), then the kept half becomes acoeff a + bcoeff b with
//   acoeff = 1 - a.b/|a|^2 * 0.5 and bcoeff = 1 - a.b/|b|^2 * 0.5, a coefficient staying 1 when
//   its |.|^2 < sqrt(DBL_MIN) (adasum.h compares the SQUARED norm with sqrt(DBL_MIN) ~ 1.5e-154,
//   so only a vector whose squared norm underflows that far counts as zero).
//   Afterwards distance-halving exchanges rebuild the full vector on every rank, bit-identical.
//   Cost: 2 log2(n) sendrecvs of c/2, c/4, ... elements and log2(n) small allreduces.
//   float32: dot products summed in double element by element, the combination in double rounded
//   to float (adasum.h's ScaledAdd<float>). fp16 (adasum.h's AVX path): the buffer is rounded to
//   half; dot products in double over 4 lanes (element i in lane i % 4, lanes summed
//   (0+2)+(1+3)); the combination in float32 as fma(float(bcoeff), b, float(acoeff) * a) rounded
//   to half at every level; then widened back to float.
//   Our sendrecv moves equal byte counts both ways, so when a region has an odd count the side
//   with the shorter half sends one extra (ignored) element.
#include "comm/gradient_averaging.h"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/half_float.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace {

const double kAdasumMinNormSq = std::sqrt(DBL_MIN);  // adasum.h: static sqrt_double_min

bool is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

// Segments must tile [0, n) in order; none means one segment over everything.
std::vector<Segment> checked_segments(const std::vector<Segment>& segments, size_t n) {
  if (segments.empty()) return {Segment{0, n}};
  size_t next = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].offset != next)
      throw std::invalid_argument("Adasum segments must tile the buffer in order: segment " + std::to_string(i) +
                                  " starts at " + std::to_string(segments[i].offset) + ", expected " +
                                  std::to_string(next));
    next += segments[i].count;
  }
  if (next != n)
    throw std::invalid_argument("Adasum segments cover " + std::to_string(next) + " elements but the buffer has " +
                                std::to_string(n));
  return segments;
}

// adasum.h's coefficient: 1 - dot / normsq * 0.5, or 1 when normsq < sqrt(DBL_MIN).
double combine_coeff(double dot, double normsq) { return normsq >= kAdasumMinNormSq ? 1.0 - dot / normsq * 0.5 : 1.0; }

// a.b, |a|^2, |b|^2 of count elements (adasum.h's ComputeDotAndNormSqrds for each type).
struct DotNorms {
  double dot = 0, aa = 0, bb = 0;
};
DotNorms dot_norms(const float* a, const float* b, size_t count) {
  DotNorms r;
  for (size_t i = 0; i < count; ++i) {
    r.dot += double(a[i]) * double(b[i]);
    r.aa += double(a[i]) * double(a[i]);
    r.bb += double(b[i]) * double(b[i]);
  }
  return r;
}
// Halves: 4 double lanes (element i in lane i % 4; the products of two halves are exact in
// double, so fma and mul+add agree), reduced as (l0 + l2) + (l1 + l3).
DotNorms dot_norms(const half_bits* a, const half_bits* b, size_t count) {
  double dot[4] = {0, 0, 0, 0}, aa[4] = {0, 0, 0, 0}, bb[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < count; ++i) {
    const double x = half_to_float(a[i]), y = half_to_float(b[i]);
    dot[i % 4] += x * y;
    aa[i % 4] += x * x;
    bb[i % 4] += y * y;
  }
  auto reduce = [](const double* l) { return (l[0] + l[2]) + (l[1] + l[3]); };
  return DotNorms{reduce(dot), reduce(aa), reduce(bb)};
}

// a = acoeff a + bcoeff b (adasum.h's ScaledAdd<float> and ScaledAddfp16).
void scaled_add(float* a, const float* b, size_t count, double acoeff, double bcoeff) {
  for (size_t i = 0; i < count; ++i) a[i] = static_cast<float>(acoeff * a[i] + bcoeff * b[i]);
}
void scaled_add(half_bits* a, const half_bits* b, size_t count, double acoeff, double bcoeff) {
  const float ca = static_cast<float>(acoeff), cb = static_cast<float>(bcoeff);
  for (size_t i = 0; i < count; ++i) a[i] = float_to_half(std::fma(cb, half_to_float(b[i]), ca * half_to_float(a[i])));
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One Adasum level for an observer: the piece given away [give_lo, give_hi) and the piece kept
// [keep_lo, keep_hi) (chunks of `parts`), `bytes` on the wire each way (a half padded to the
// larger one), from begin_ns to now.
void observe_level(AllreduceObserver* observer, int step, const char* phase, int peer, int parts, size_t send_lo,
                   size_t send_hi, int send_chunk, size_t recv_lo, size_t recv_hi, int recv_chunk, size_t bytes,
                   size_t n, int64_t begin_ns) {
  if (!observer) return;
  AllreduceStep s{};
  s.step = step;
  s.phase = phase;
  s.send_peer = s.recv_peer = peer;
  s.send_bytes = s.recv_bytes = bytes;
  s.begin_ns = begin_ns;
  s.end_ns = steady_ns();
  s.parts = parts;
  s.send_chunk = send_chunk;
  s.recv_chunk = recv_chunk;
  s.send_lo = send_lo;
  s.send_hi = send_hi;
  s.recv_lo = recv_lo;
  s.recv_hi = recv_hi;
  s.elements = n;
  observer->on_step(s);
}

template <typename S>
void adasum_vhdd(Communicator& comm, S* buf, size_t n, const std::vector<Segment>& segs,
                 std::vector<AdasumCoefficients>* trace, AllreduceObserver* observer) {
  const int rank = comm.rank(), size = comm.size();
  const size_t nseg = segs.size();
  struct Level {
    int peer;
    size_t lo, hi, keep_lo, keep_hi;
    int parts, keep_chunk, give_chunk;  // the observer's names of the two halves
  };
  std::vector<Level> levels;
  std::vector<S> recv(n / 2 + 1);
  std::vector<double> stats;
  size_t lo = 0, hi = n;
  int region = 0, parts = 1, step = 0;

  for (int d = 1; d < size; d <<= 1) {
    const int64_t begin_ns = observer ? steady_ns() : 0;
    const int peer = rank ^ d;
    const bool left = (rank & d) == 0;
    const size_t count = hi - lo, mid = lo + count / 2, big = count - count / 2;
    const size_t keep_lo = left ? lo : mid, keep_hi = left ? mid : hi;
    // Send the half we give away (padded to `big` elements) and receive the peer's copy of ours.
    const size_t send_from = left ? mid : lo;
    if (big > 0) comm.sendrecv(buf + send_from, recv.data(), big * sizeof(S), peer);

    // Partial dot/norms of our kept half, in the slots of our group of 2d ranks.
    const int groups = size / (2 * d), group = rank / (2 * d);
    stats.assign(static_cast<size_t>(groups) * nseg * 3, 0.0);
    double* mine = stats.data() + static_cast<size_t>(group) * nseg * 3;
    for (size_t s = 0; s < nseg; ++s) {
      size_t a0 = std::max(segs[s].offset, keep_lo), a1 = std::min(segs[s].offset + segs[s].count, keep_hi);
      const DotNorms p = a1 > a0 ? dot_norms(buf + a0, recv.data() + (a0 - keep_lo), a1 - a0) : DotNorms{};
      mine[s * 3 + 0] = p.dot;
      mine[s * 3 + 1] = left ? p.aa : p.bb;  // |left vector|^2
      mine[s * 3 + 2] = left ? p.bb : p.aa;  // |right vector|^2
    }
    comm.allreduce_sum(stats.data(), stats.size());

    for (size_t s = 0; s < nseg; ++s) {
      const double dot = mine[s * 3], c_left = combine_coeff(dot, mine[s * 3 + 1]),
                   c_right = combine_coeff(dot, mine[s * 3 + 2]);
      if (trace) trace->push_back(AdasumCoefficients{d, static_cast<int>(s), c_left, c_right});
      const double ca = left ? c_left : c_right, cb = left ? c_right : c_left;
      size_t a0 = std::max(segs[s].offset, keep_lo), a1 = std::min(segs[s].offset + segs[s].count, keep_hi);
      if (a1 > a0) scaled_add(buf + a0, recv.data() + (a0 - keep_lo), a1 - a0, ca, cb);
    }
    parts *= 2;
    const int keep_chunk = 2 * region + (left ? 0 : 1), give_chunk = 2 * region + (left ? 1 : 0);
    const size_t give_lo = left ? mid : lo, give_hi = left ? hi : mid;
    observe_level(observer, step++, "reduce-scatter", peer, parts, give_lo, give_hi, give_chunk, keep_lo, keep_hi,
                  keep_chunk, big * sizeof(S), n, begin_ns);
    levels.push_back(Level{peer, lo, hi, keep_lo, keep_hi, parts, keep_chunk, give_chunk});
    region = keep_chunk;
    lo = keep_lo;
    hi = keep_hi;
  }

  // Distance-halving: give the peer our reduced part, take theirs.
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const int64_t begin_ns = observer ? steady_ns() : 0;
    const size_t count = it->hi - it->lo, big = count - count / 2;
    if (big == 0) continue;
    const bool keep_first = it->keep_lo == it->lo;
    const size_t other_lo = keep_first ? it->keep_hi : it->lo, other_hi = keep_first ? it->hi : it->keep_lo;
    // Send `big` elements from the start of our part; the lower part (floor) pads at its end.
    const size_t send_from = keep_first ? it->lo : it->keep_lo;
    comm.sendrecv(buf + send_from, recv.data(), big * sizeof(S), it->peer);
    std::memcpy(buf + other_lo, recv.data(), (other_hi - other_lo) * sizeof(S));
    observe_level(observer, step++, "allgather", it->peer, it->parts, it->keep_lo, it->keep_hi, it->keep_chunk,
                  other_lo, other_hi, it->give_chunk, big * sizeof(S), n, begin_ns);
  }
}

}  // namespace

double adasum_norm_sq_threshold() { return kAdasumMinNormSq; }

void scale_buffer(float* x, size_t n, double factor) {
  if (factor == 1.0) return;
  const float f = static_cast<float>(factor);
  for (size_t i = 0; i < n; ++i) x[i] = f * x[i];
}

void scale_half_buffer(half_bits* x, size_t n, double factor) {
  if (factor == 1.0) return;
  const float f = static_cast<float>(factor);
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  const __m256 fv = _mm256_set1_ps(f);
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))), fv);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(x + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
  for (; i < n; ++i) x[i] = float_to_half(f * half_to_float(x[i]));
}

void adasum_combine(float* out, const float* a, const float* b, const std::vector<Segment>& segments) {
  for (const Segment& s : segments) {
    const DotNorms p = dot_norms(a + s.offset, b + s.offset, s.count);
    const double ca = combine_coeff(p.dot, p.aa), cb = combine_coeff(p.dot, p.bb);
    for (size_t i = s.offset; i < s.offset + s.count; ++i) out[i] = static_cast<float>(ca * a[i] + cb * b[i]);
  }
}

void adasum_allreduce(Communicator& comm, float* data, size_t n, const std::vector<Segment>& segments, bool fp16,
                      std::vector<AdasumCoefficients>* trace, AllreduceObserver* observer) {
  const int size = comm.size();
  if (!is_power_of_two(size))
    throw std::runtime_error("Adasum needs a power-of-two number of ranks (as Horovod's), but this job has " +
                             std::to_string(size) + "; use 1, 2, 4, 8, ... ranks or drop --use-adasum");
  const std::vector<Segment> segs = checked_segments(segments, n);
  if (trace) trace->clear();
  if (fp16) {
    std::vector<half_bits> h(n);
    floats_to_halves(h.data(), data, n);
    if (size > 1) adasum_vhdd(comm, h.data(), n, segs, trace, observer);
    halves_to_floats(data, h.data(), n);
    return;
  }
  if (size > 1) adasum_vhdd(comm, data, n, segs, trace, observer);
}

void average_gradients(Communicator& comm, float* grad, size_t n, const std::vector<Segment>& segments,
                       const GradientAveraging& how) {
  const double f = how.predivide_factor;
  if (!(f > 0) || !std::isfinite(f))
    throw std::invalid_argument("--gradient-predivide-factor must be a positive number, got " + std::to_string(f));
  if (how.adasum) {
    if (f != 1.0)
      throw std::invalid_argument(
          "--gradient-predivide-factor is only supported with averaging, not with "
          "--use-adasum (as in Horovod)");
    adasum_allreduce(comm, grad, n, segments, how.fp16, how.adasum_trace);
    return;
  }
  const double pre = 1.0 / f, post = f / comm.size();
  if (!how.fp16) {
    scale_buffer(grad, n, pre);
    allreduce_sum(comm, how.algorithm, grad, n, how.observer);
    scale_buffer(grad, n, post);
    return;
  }
  thread_local std::vector<half_bits> wire;
  wire.resize(n);
  floats_to_halves(wire.data(), grad, n);
  scale_half_buffer(wire.data(), n, pre);
  allreduce_sum_f16(comm, how.algorithm, wire.data(), n, how.observer);
  scale_half_buffer(wire.data(), n, post);
  halves_to_floats(grad, wire.data(), n);
}
