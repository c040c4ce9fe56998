// crc32: zlib's CRC-32 over any length (zlib takes 32-bit lengths, so long inputs go in chunks).
#include "src/crc32.h"

#include <zlib.h>

uint32_t crc32_of(const void* data, size_t n) {
  const Bytef* p = static_cast<const Bytef*>(data);
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t kChunk = size_t(1) << 30;
  while (n > 0) {
    const size_t take = n < kChunk ? n : kChunk;
    crc = crc32(crc, p, uInt(take));
    p += take;
    n -= take;
  }
  return uint32_t(crc);
}
