// c10d_wire: the requests and replies of PyTorch's c10d TCPStore (the store torchrun's agent
// serves at MASTER_ADDR:MASTER_PORT, or the worker of rank 0 when the agent's store is off), as
// PyTorch 1.13 speaks it. Pure: bytes in, bytes out. The client side (C10dStoreClient) encodes
// requests and checks replies; the server side (C10dStoreServer) decodes requests and encodes
// replies.
//
// No handshake: a client connects and sends requests. A request is one byte of query type, then
// its arguments; a string (key or value) is a u64 length then its bytes; integers are sent as
// their in-memory bytes (little-endian on every machine baresgd builds for).
//   SET         (0)  key value               -> no reply
//   COMPARE_SET (1)  key expected desired    -> u64 length + the value the key now has (see
//                                               comm/c10d_store_server.cc for the rule)
//   GET         (2)  key                     -> u64 length + value. PyTorch's server closes the
//                                               connection on GET of a missing key: ask only once
//                                               CHECK said READY (or after WAIT)
//   ADD         (3)  key i64                 -> i64, the new value (a missing key counts as 0;
//                                               the value is stored as decimal text)
//   CHECK       (4)  u64 n, n keys           -> one byte: 0 READY (every key set), 1 NOT_READY
//   WAIT        (5)  u64 n, n keys           -> one byte 0 (STOP_WAITING), sent once every key is
//                                               set: maybe long after, with other replies between
//   GETNUMKEYS  (6)                          -> i64, how many keys the store holds
//   WATCH_KEY   (7)  key                     -> (callbacks: not served by baresgd's server)
//   DELETE_KEY  (8)  key                     -> i64, 1 if the key was there, else 0
// PyTorch's TCPStore client sends every key with "/" in front (kC10dKeyPrefix): the encoders take
// keys as they go on the wire, and C10dStoreClient adds the prefix. PyTorch's client also opens a
// second connection that stays silent (its callback channel) and ADDs 1 to "init/" (no prefix)
// when it is told the number of workers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

enum class C10dQuery : uint8_t {
  kSet = 0,
  kCompareSet = 1,
  kGet = 2,
  kAdd = 3,
  kCheck = 4,
  kWait = 5,
  kGetNumKeys = 6,
  kWatchKey = 7,
  kDeleteKey = 8
};
constexpr const char* kC10dKeyPrefix = "/";
constexpr uint8_t kC10dReady = 0, kC10dNotReady = 1, kC10dStopWaiting = 0;
// The longest value a GET reply may announce, or a request carry, before it is taken for
// garbage (64 MiB); the longest key a request may carry (64 KiB); the most keys one CHECK or WAIT
// may name (65536).
constexpr uint64_t kC10dMaxValueBytes = uint64_t(64) << 20;
constexpr uint64_t kC10dMaxKeyBytes = uint64_t(64) << 10;
constexpr uint64_t kC10dMaxKeysPerRequest = uint64_t(1) << 16;

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

// ---- The server side. ----

// One decoded request. keys holds the one key of SET/COMPARE_SET/GET/ADD/WATCH_KEY/DELETE_KEY,
// or the n keys of CHECK/WAIT (none for GETNUMKEYS).
struct C10dRequest {
  C10dQuery query = C10dQuery::kSet;
  std::vector<std::string> keys;
  std::string value;    // SET: the value; COMPARE_SET: the expected value
  std::string desired;  // COMPARE_SET: the value to set
  int64_t delta = 0;    // ADD
};

// Decodes the request at the start of buf[0, n). Returns the number of bytes it took (*out
// filled), or 0 when buf holds only the start of one (nothing is copied until it is whole).
// Throws std::runtime_error (one line) for an unknown query byte, or a key, value or key count
// over the limits above, as soon as the bytes that show it have arrived: a client cannot make the
// server buffer more than one legal request.
size_t parse_c10d_request(const char* buf, size_t n, C10dRequest* out);
// The name PyTorch gives a query ("SET", "WAIT", ...), or its number in hex when unknown.
std::string c10d_query_name(uint8_t query);

// Replies: a u64-length-prefixed value, an i64, or one byte.
std::string encode_c10d_value_reply(const std::string& value);
std::string encode_c10d_i64_reply(int64_t v);
