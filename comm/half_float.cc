// half_float: IEEE binary16 conversions (round to nearest even, quiet NaNs), scalar and bulk.
#include "comm/half_float.h"

#include <cmath>
#include <cstring>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace {

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

}  // namespace

// The F16C path gives the same bits as the scalar functions (RNE, quiet NaNs).
void floats_to_halves(half_bits* out, const float* in, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < n; ++i) out[i] = float_to_half(in[i]);
}
void halves_to_floats(float* out, const half_bits* in, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = half_to_float(in[i]);
}

half_bits float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) {                                                  // inf or NaN
    if (a == 0x7F800000u) return sign | 0x7C00u;                           // inf
    return static_cast<half_bits>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // quiet NaN, top payload bits
  }
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to inf
  if (a >= 0x38800000u) {                       // normal half (>= 2^-14)
    uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3FFu);
    const uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent: still right
    return static_cast<half_bits>(sign | h);
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25 rounds (to even) to zero
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
