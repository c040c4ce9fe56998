// distributed_optimizer: Horovod's gradient reduction semantics over one flat buffer.
//
// Average (Horovod op=Average, prescale 1/f, postscale f/size):
//   g *= 1/f (in double, rounded to float), ONE allreduce_sum over the whole buffer, g *= f/size.
//   fp16: after the prescale each value is rounded to IEEE half, the halves are summed by ONE
//   allreduce_sum_f16 (float add, half rounding per addition), converted back to float, and then
//   postscaled in float precision (Horovod postscales the halves; the difference is below one half
//   ulp of the sum, and we keep the more precise order).
// Adasum (Horovod's AdasumMPI, vector-halving distance-doubling over a power-of-two world):
//   level d = 1, 2, 4, ...: pair with rank ^ d; the lower rank keeps the first floor(c/2) elements
//   of the current region, the upper rank the rest; each sends the half it gives away and receives
//   the peer's copy of the half it keeps. Both now hold a = own vector and b = peer's vector on the
//   kept half. Per segment (one per layer tensor) the partial a.b, |left|^2 and |right|^2 are summed
//   over the 2d ranks that together hold the two vectors being combined (one allreduce of doubles
//   per level, every group in its own slots), then the kept half becomes
//   (1 - a.b/(2|a|^2)) a + (1 - a.b/(2|b|^2)) b. A norm^2 below 1e-8 (Horovod's threshold) keeps
//   that vector's coefficient at 1, so a zero vector yields the other vector (the sum).
//   Afterwards distance-halving exchanges rebuild the full vector on every rank, bit-identical.
//   Cost: 2 log2(n) sendrecvs of c/2, c/4, ... elements and log2(n) small allreduces.
//   fp16 + Adasum: the buffer is rounded to half and the whole algorithm runs on halves (halves
//   on the wire and in the buffers; dot products in double, combination in double rounded to half
//   at every level, as Horovod's fp16 Adasum), then converted back to float.
//   Our sendrecv moves equal byte counts both ways, so when a region has an odd count the side
//   with the shorter half sends one extra (ignored) element.
#include "comm/distributed_optimizer.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace {

constexpr double kAdasumMinNormSq = 1e-8;  // Horovod: below this a vector counts as zero

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Bulk conversions; the F16C path gives the same bits as the scalar functions (RNE, quiet NaNs).
void to_half(half_bits* out, const float* in, size_t n, double scale) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  if (scale == 1.0) {
    for (; i + 8 <= n; i += 8) {
      __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
  }
#endif
  for (; i < n; ++i) out[i] = float_to_half(scale == 1.0 ? in[i] : static_cast<float>(in[i] * scale));
}
void from_half(float* out, const half_bits* in, size_t n, double scale) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  if (scale == 1.0) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
#endif
  for (; i < n; ++i) out[i] = scale == 1.0 ? half_to_float(in[i]) : static_cast<float>(half_to_float(in[i]) * scale);
}

void scale_in_place(float* g, size_t n, double s) {
  if (s == 1.0) return;
  for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>(g[i] * s);
}

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

// Element access for the two storage types.
inline double load(float x) { return x; }
inline double load(half_bits x) { return half_to_float(x); }
inline void store(float* p, double v) { *p = static_cast<float>(v); }
inline void store(half_bits* p, double v) { *p = float_to_half(static_cast<float>(v)); }

double combine_coeff(double dot, double normsq) { return normsq >= kAdasumMinNormSq ? 1.0 - dot / (2.0 * normsq) : 1.0; }

template <typename S>
void adasum_vhdd(Communicator& comm, S* buf, size_t n, const std::vector<Segment>& segs) {
  const int rank = comm.rank(), size = comm.size();
  const size_t nseg = segs.size();
  struct Level {
    int peer;
    size_t lo, hi, keep_lo, keep_hi;
  };
  std::vector<Level> levels;
  std::vector<S> recv(n / 2 + 1);
  std::vector<double> stats;
  size_t lo = 0, hi = n;

  for (int d = 1; d < size; d <<= 1) {
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
      double dot = 0, na = 0, nb = 0;
      for (size_t i = a0; i < a1; ++i) {
        double a = load(buf[i]), b = load(recv[i - keep_lo]);
        dot += a * b;
        na += a * a;
        nb += b * b;
      }
      mine[s * 3 + 0] = dot;
      mine[s * 3 + 1] = left ? na : nb;  // |left vector|^2
      mine[s * 3 + 2] = left ? nb : na;  // |right vector|^2
    }
    comm.allreduce_sum(stats.data(), stats.size());

    for (size_t s = 0; s < nseg; ++s) {
      const double dot = mine[s * 3], c_left = combine_coeff(dot, mine[s * 3 + 1]),
                   c_right = combine_coeff(dot, mine[s * 3 + 2]);
      const double ca = left ? c_left : c_right, cb = left ? c_right : c_left;
      size_t a0 = std::max(segs[s].offset, keep_lo), a1 = std::min(segs[s].offset + segs[s].count, keep_hi);
      for (size_t i = a0; i < a1; ++i) store(&buf[i], ca * load(buf[i]) + cb * load(recv[i - keep_lo]));
    }
    levels.push_back(Level{peer, lo, hi, keep_lo, keep_hi});
    lo = keep_lo;
    hi = keep_hi;
  }

  // Distance-halving: give the peer our reduced part, take theirs.
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const size_t count = it->hi - it->lo, big = count - count / 2;
    if (big == 0) continue;
    const bool keep_first = it->keep_lo == it->lo;
    const size_t other_lo = keep_first ? it->keep_hi : it->lo, other_hi = keep_first ? it->hi : it->keep_lo;
    // Send `big` elements from the start of our part; the lower part (floor) pads at its end.
    const size_t send_from = keep_first ? it->lo : it->keep_lo;
    comm.sendrecv(buf + send_from, recv.data(), big * sizeof(S), it->peer);
    std::memcpy(buf + other_lo, recv.data(), (other_hi - other_lo) * sizeof(S));
  }
}

void adasum_allreduce(Communicator& comm, float* grad, size_t n, const std::vector<Segment>& segments, bool fp16) {
  const int size = comm.size();
  if (!is_power_of_two(size))
    throw std::runtime_error("Adasum needs a power-of-two number of ranks (as Horovod's), but this job has " +
                             std::to_string(size) + "; use 1, 2, 4, 8, ... ranks or drop --use-adasum");
  const std::vector<Segment> segs = checked_segments(segments, n);
  if (fp16) {
    std::vector<half_bits> h(n);
    to_half(h.data(), grad, n, 1.0);
    if (size > 1) adasum_vhdd(comm, h.data(), n, segs);
    from_half(grad, h.data(), n, 1.0);
    return;
  }
  if (size > 1) adasum_vhdd(comm, grad, n, segs);
}

}  // namespace

half_bits float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) {                                    // inf or NaN
    if (a == 0x7F800000u) return sign | 0x7C00u;             // inf
    return static_cast<half_bits>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // quiet NaN, top payload bits
  }
  if (a >= 0x477FF000u) return sign | 0x7C00u;               // >= 65520 rounds to inf
  if (a >= 0x38800000u) {                                    // normal half (>= 2^-14)
    uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3FFu);
    const uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent: still right
    return static_cast<half_bits>(sign | h);
  }
  if (a <= 0x33000000u) return sign;                         // <= 2^-25 rounds (to even) to zero
  // Subnormal half: round(value * 2^24) with the 24-bit significand m = value * 2^(150 - e).
  const uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u, shift = 126u - e;  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return static_cast<half_bits>(sign | q);
}

float half_to_float(half_bits h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) {
    float v = std::ldexp(static_cast<float>(m), -24);  // zero or subnormal, exact
    return bits_float(float_bits(v) | sign);
  }
  if (e == 31) return bits_float(sign | 0x7F800000u | (m ? 0x400000u | (m << 13) : 0u));  // inf, quiet NaN
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

void adasum_combine(float* out, const float* a, const float* b, const std::vector<Segment>& segments) {
  for (const Segment& s : segments) {
    double dot = 0, na = 0, nb = 0;
    for (size_t i = s.offset; i < s.offset + s.count; ++i) {
      dot += static_cast<double>(a[i]) * b[i];
      na += static_cast<double>(a[i]) * a[i];
      nb += static_cast<double>(b[i]) * b[i];
    }
    const double ca = combine_coeff(dot, na), cb = combine_coeff(dot, nb);
    for (size_t i = s.offset; i < s.offset + s.count; ++i) out[i] = static_cast<float>(ca * a[i] + cb * b[i]);
  }
}

void average_gradients(Communicator& comm, float* grad, size_t n, const std::vector<Segment>& segments,
                       const GradientAveraging& how) {
  const double f = how.predivide_factor;
  if (!(f > 0) || !std::isfinite(f))
    throw std::invalid_argument("--gradient-predivide-factor must be a positive number, got " + std::to_string(f));
  if (how.adasum) {
    if (f != 1.0)
      throw std::invalid_argument("--gradient-predivide-factor is only supported with averaging, not with "
                                  "--use-adasum (as in Horovod)");
    adasum_allreduce(comm, grad, n, segments, how.fp16);
    return;
  }
  const double pre = 1.0 / f, post = f / comm.size();
  if (!how.fp16) {
    scale_in_place(grad, n, pre);
    allreduce_sum(comm, how.algorithm, grad, n, how.observer);
    scale_in_place(grad, n, post);
    return;
  }
  thread_local std::vector<half_bits> wire;
  wire.resize(n);
  to_half(wire.data(), grad, n, pre);
  allreduce_sum_f16(comm, how.algorithm, wire.data(), n, how.observer);
  from_half(grad, wire.data(), n, post);
}
