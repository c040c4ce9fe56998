// c10d_wire: the requests and replies of PyTorch's c10d TCPStore (the store torchrun's agent
// serves at MASTER_ADDR:MASTER_PORT), as PyTorch 1.13 speaks it. Pure: bytes in, bytes out.
//
// No handshake: a client connects and sends requests. A request is one byte of query type, then
// its arguments; a string (key or value) is a u64 length then its bytes; integers are sent as
// their in-memory bytes (little-endian on every machine baresgd builds for).
//   SET   (0)  key value            -> no reply
//   GET   (2)  key                  -> u64 length + value (only ask once CHECK said READY: the
//                                      server answers GET of a missing key by waiting for it)
//   ADD   (3)  key i64              -> i64, the new value (a missing key counts as 0)
//   CHECK (4)  u64 n, n keys        -> one byte: 0 READY (every key set), 1 NOT_READY
// PyTorch's TCPStore client sends every key with "/" in front (kC10dKeyPrefix): the encoders take
// keys as they go on the wire, and C10dStoreClient adds the prefix.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

enum class C10dQuery : uint8_t { kSet = 0, kCompareSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5 };
constexpr const char* kC10dKeyPrefix = "/";
constexpr uint8_t kC10dReady = 0, kC10dNotReady = 1;
// The longest value a GET reply may announce before it is taken for garbage (64 MiB).
constexpr uint64_t kC10dMaxValueBytes = uint64_t(64) << 20;

std::string encode_c10d_set(const std::string& key, const std::string& value);
std::string encode_c10d_get(const std::string& key);
std::string encode_c10d_add(const std::string& key, int64_t delta);
std::string encode_c10d_check(const std::vector<std::string>& keys);

// Little-endian fixed-width integers (the first 8 bytes of p).
uint64_t get_u64le(const char* p);
void put_u64le(std::string* out, uint64_t v);

// The length a GET reply announces, or throws std::runtime_error (one line) when it is over
// kC10dMaxValueBytes. head must hold 8 bytes.
uint64_t c10d_get_reply_length(const char* head);
// True for READY, false for NOT_READY; throws (one line, the byte in hex) for anything else.
bool c10d_check_reply_ready(uint8_t byte);
