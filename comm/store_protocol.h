// store_protocol: the wire format of the rendezvous key-value store that ./launch serves to Gloo
// ranks, with its authentication (HMAC-SHA256 challenge-response on a per-job secret).
//
// Every message is a frame: 4-byte big-endian length, then that many bytes (<= kMaxFrameBytes).
// Handshake: server -> client: frame "BSGD-STORE-1" + 32 random nonce bytes;
//            client -> server: frame HMAC-SHA256(secret, nonce) (32 bytes; the key is the secret
//                              string's bytes as given, i.e. the 64 hex characters);
//            server -> client: frame "OK", or "DENIED" and close (constant-time compare).
//            Before authentication the only acceptable frame is exactly 32 bytes long; any other
//            length prefix closes the connection at once (nothing is buffered for it).
// Requests (client -> server), one frame each, replies one frame each, in order (pipelining ok):
//   'S' u32 keylen key value  -> "OK"                       set key = value
//   'G' u32 keylen key        -> 'F' value | 'N'            get (found / not found yet)
//   'A' u32 keylen key i64    -> i64 (8 bytes, big-endian)  atomic add, returns the new value
//   'P' u32 keylen prefix u32 want                            gather: every key under prefix,
//        -> 'F' u32 n (u32 klen key u32 vlen value) x n       once at least `want` exist (n >= want,
//         | 'N' u32 count                                     keys in byte order), else how many do
// The gather is what makes a rendezvous O(W) requests: each of W ranks sets its key, then polls one
// 'P' until all W are there and reads them in one reply, where a 'G' per peer costs W(W-1).
// All integers are big-endian. An added counter is stored as its decimal ASCII text (so 'G' on it
// returns e.g. "3"); a missing key counts as 0.
// A well-formed request that cannot be served (store full, 'A' on a non-integer value or overflow)
// gets the reply "ERR " + reason (always longer than 8 bytes) and the connection stays open.
// Anything malformed (bad length, unknown op, keylen past the frame, trailing bytes) closes that
// connection only, without a reply; other clients are not affected.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

constexpr uint32_t kMaxFrameBytes = 64u << 20;
constexpr const char* kStoreGreeting = "BSGD-STORE-1";
constexpr size_t kStoreNonceBytes = 32;
constexpr size_t kStoreMacBytes = 32;
constexpr const char* kStoreErrorPrefix = "ERR ";

// SHA-256 and HMAC-SHA256 (raw 32-byte digests).
std::string sha256(const std::string& data);
std::string hmac_sha256(const std::string& key, const std::string& message);
// Constant-time equality of two byte strings (length leaks, content does not).
bool constant_time_equal(const std::string& a, const std::string& b);
// n bytes from the kernel's urandom pool (getrandom(2), else /dev/urandom). Throws on failure.
std::string random_bytes(size_t n);
// 32 bytes from /dev/urandom, hex-encoded (64 chars): a fresh job secret.
std::string random_secret_hex();
// Lowercase hex of raw bytes (for digests in tests and logs).
std::string to_hex(const std::string& bytes);

// ---- Encoding helpers shared by StoreClient and the server's StoreSession. ----
void put_u32be(std::string* out, uint32_t v);
void put_i64be(std::string* out, int64_t v);
uint32_t get_u32be(const char* p);
int64_t get_i64be(const char* p);
// length prefix + body (body.size() must be <= kMaxFrameBytes).
std::string encode_frame(const std::string& body);
// Request bodies (not yet framed).
std::string encode_set_request(const std::string& key, const std::string& value);
std::string encode_get_request(const std::string& key);
std::string encode_add_request(const std::string& key, int64_t delta);
std::string encode_gather_request(const std::string& prefix, uint32_t want);

struct StoreRequest {
  char op = 0;        // 'S', 'G', 'A' or 'P'
  std::string key;    // the prefix for 'P'
  std::string value;  // 'S' only
  int64_t delta = 0;  // 'A' only
  uint32_t want = 0;  // 'P' only
};

// A gather's keys and values, in the server's (byte) order.
using GatheredKeys = std::vector<std::pair<std::string, std::string>>;
// The server's 'F' reply body for these entries.
std::string encode_gather_found(const GatheredKeys& entries);
// Parses a gather reply body: true with *count set for 'N' (and entries cleared), true with the
// entries (and *count their number) for 'F'; false when it is malformed (short, trailing bytes,
// lengths past the end, another tag).
bool parse_gather_reply(const char* body, size_t n, GatheredKeys* entries, uint32_t* count);
// Parses one request body; false if it is malformed (unknown op, short, trailing bytes).
bool parse_store_request(const char* body, size_t n, StoreRequest* req);

// Strict decimal int64 ("-12", "0"; no spaces, no '+', no leading zeros beyond "0"), for counters.
bool parse_decimal_i64(const std::string& text, int64_t* v);
// Printable form of a key for error messages (non-printable bytes as \xNN, long keys cut).
std::string printable_key(const std::string& key);
