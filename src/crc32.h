// crc32: the CRC-32 (zlib's, IEEE 802.3 polynomial) that checkpoints, --inspect and --check-sync
// put on bytes, in one place so a parameter checksum printed by one matches the others.
#pragma once
#include <cstddef>
#include <cstdint>

// CRC-32 of bytes [data, data + n); n may exceed 4 GiB.
uint32_t crc32_of(const void* data, size_t n);
