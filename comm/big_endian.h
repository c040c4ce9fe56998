// big_endian: loading and storing unsigned integers in network byte order (most significant byte
// first), for the framings that use it: the rendezvous store's frames (comm/store_protocol),
// the launcher-agent protocol (launcher/agent_protocol) and MNIST's IDX headers (src/mnist).
// Header-only and free of I/O, so every parser and fuzzer can include it.
#pragma once
#include <cstdint>
#include <string>

// The 4 bytes at p as a big-endian unsigned integer.
inline uint32_t load_u32be(const void* p) {
  const unsigned char* u = static_cast<const unsigned char*>(p);
  return (uint32_t(u[0]) << 24) | (uint32_t(u[1]) << 16) | (uint32_t(u[2]) << 8) | uint32_t(u[3]);
}

// The 8 bytes at p as a big-endian unsigned integer.
inline uint64_t load_u64be(const void* p) {
  const unsigned char* u = static_cast<const unsigned char*>(p);
  return (uint64_t(load_u32be(u)) << 32) | load_u32be(u + 4);
}

// Appends v's 4 bytes, most significant first.
inline void append_u32be(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Appends v's 8 bytes, most significant first.
inline void append_u64be(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}
