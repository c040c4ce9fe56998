// half_float: IEEE binary16 (half) conversions for the fp16 allreduce: round to nearest even,
// NaNs kept quiet with their top payload bits. Every backend and the averaging use these, so a
// half on the wire has the same bits whichever code made it.
#pragma once
#include <cstddef>
#include <cstdint>

// Half-precision storage type for fp16 allreduce (IEEE binary16 bits).
using half_bits = uint16_t;

half_bits float_to_half(float f);
float half_to_float(half_bits h);
// The same conversions over n values (F16C where built for it; the same bits as the scalar ones).
void floats_to_halves(half_bits* out, const float* in, size_t n);
void halves_to_floats(float* out, const half_bits* in, size_t n);
