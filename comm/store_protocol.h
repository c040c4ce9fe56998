// store_protocol: the wire format of the rendezvous key-value store that ./launch serves to Gloo
// ranks, with its authentication (HMAC-SHA256 challenge-response on a per-job secret).
//
// Every message is a frame: 4-byte big-endian length, then that many bytes (<= kMaxFrameBytes).
// Handshake: server -> client: frame "BSGD-STORE-1" + 32 random nonce bytes;
//            client -> server: frame HMAC-SHA256(secret, nonce) (32 bytes);
//            server -> client: frame "OK", or "DENIED" and close (constant-time compare).
// Requests (client -> server), one frame each, replies one frame each:
//   'S' u32 keylen key value  -> "OK"                       set key = value
//   'G' u32 keylen key        -> 'F' value | 'N'            get (found / not found yet)
//   'A' u32 keylen key i64    -> i64 (8 bytes, big-endian)  atomic add, returns the new value
// Anything malformed closes that connection only; other clients are not affected.
#pragma once
#include <cstdint>
#include <string>

constexpr uint32_t kMaxFrameBytes = 64u << 20;
constexpr const char* kStoreGreeting = "BSGD-STORE-1";

// SHA-256 and HMAC-SHA256 (raw 32-byte digests).
std::string sha256(const std::string& data);
std::string hmac_sha256(const std::string& key, const std::string& message);
// Constant-time equality of two byte strings (length leaks, content does not).
bool constant_time_equal(const std::string& a, const std::string& b);
// 32 bytes from /dev/urandom, hex-encoded (64 chars): a fresh job secret.
std::string random_secret_hex();
