// store_session: one rendezvous-store connection's protocol logic, without sockets (bytes in,
// bytes out), so the server's poll loop stays small and the parser can be fuzzed directly
// (tests/fuzz/fuzz_store_server.cc). Wire format: comm/store_protocol.h.
//
// Memory is bounded by what a client actually sends, never by what it announces: a length prefix
// is checked as soon as its 4 bytes arrive (exactly 32 before authentication, at most
// max_frame_bytes after), and the frame's bytes are buffered only as they come in. Replies are
// queued in an output buffer; while more than max_pending_output bytes are unsent the session
// stops parsing (and wants_input() turns false), so a client that pipelines requests without
// reading the replies cannot grow the server's memory either.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "comm/store_protocol.h"

struct StoreLimits {
  uint32_t max_frame_bytes = kMaxFrameBytes;        // longest accepted request frame
  size_t max_connections = 1024;                    // open client connections at once
  uint64_t max_stored_bytes = uint64_t(256) << 20;  // keys + values (+64 bytes per entry)
  std::chrono::milliseconds auth_timeout{10000};    // to finish the handshake, else closed
  size_t max_pending_output = size_t(4) << 20;      // stop parsing while this much is unsent
};

// The limits of ./launch's store for a job of `ranks` ranks: every rank holds one authenticated
// connection during start-up, so the connection cap grows with the job (the default 1024 would
// turn rank 1025 away) with room for a few more (tests, --verbose tools).
inline StoreLimits store_limits_for_ranks(size_t ranks) {
  StoreLimits limits;
  if (ranks + 64 > limits.max_connections) limits.max_connections = ranks + 64;
  return limits;
}

// The key-value table shared by all sessions of one server (used from one thread only).
class StoreTable {
 public:
  explicit StoreTable(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  const std::string* find(const std::string& key) const;
  // False (and nothing changed) if the table would grow past max_bytes.
  bool set(const std::string& key, const std::string& value);
  enum class AddResult { kOk, kNotInteger, kOverflow, kFull };
  // value(key) += delta, stored as decimal text; a missing key counts as 0.
  AddResult add(const std::string& key, int64_t delta, int64_t* result);
  uint64_t stored_bytes() const { return bytes_; }
  size_t size() const { return kv_.size(); }
  // How many keys start with prefix. The first query counts them (a range of the sorted table);
  // after that the count is kept up to date as keys are added, so the W polls of a rendezvous
  // cost O(log n) each, not O(W). At most kMaxCountedPrefixes are kept (then each query counts).
  size_t count_prefix(const std::string& prefix);
  // The 'F' gather reply for every key under prefix (built once per change of those keys).
  const std::string& gather_reply(const std::string& prefix);

 private:
  static constexpr size_t kMaxCountedPrefixes = 64;
  static uint64_t cost(size_t key_len, size_t value_len) { return key_len + value_len + 64; }
  void key_changed(const std::string& key, bool added);
  struct PrefixState {
    size_t count = 0;
    bool reply_valid = false;
    std::string reply;  // encode_gather_found of the keys, while reply_valid
  };
  std::map<std::string, PrefixState> prefixes_;
  std::string uncached_reply_;  // gather_reply's answer for a prefix past kMaxCountedPrefixes
  std::map<std::string, std::string> kv_;
  uint64_t bytes_ = 0;
  uint64_t max_bytes_;
};

// The reply body to one parsed request against the table (every op of store_protocol.h): what
// StoreSession sends, and the MUNGE store (comm/munge_store_server.h) too. A gather whose reply
// would pass max_reply_bytes gets "ERR ..." instead.
std::string store_reply(StoreTable* table, const StoreRequest& req, size_t max_reply_bytes);

class StoreSession {
 public:
  enum class CloseReason {
    kNone,        // still open
    kPeerClosed,  // the client sent EOF (after its replies are flushed)
    kDenied,      // wrong HMAC: "DENIED" is queued, close after flushing it
    kMalformed,   // bad length, bad handshake frame, unknown op, malformed request: close now
  };

  // Queues the greeting (kStoreGreeting + nonce) at once. nonce must be kStoreNonceBytes long.
  StoreSession(StoreTable* table, const std::string& secret, const std::string& nonce, const StoreLimits& limits);

  // Bytes received from the client. Call only while wants_input(); bytes after close are ignored.
  void on_input(const char* data, size_t n);
  // The client half-closed (recv returned 0).
  void on_input_closed();

  // Unsent reply bytes; after sending k of them call on_output_written(k).
  const char* output_data() const { return out_.data() + out_pos_; }
  size_t output_size() const { return out_.size() - out_pos_; }
  void on_output_written(size_t n);

  // Received bytes not yet parsed (at most one partial frame, or what arrived while paused).
  size_t input_size() const { return in_.size() - in_pos_; }

  bool wants_input() const;
  bool authenticated() const { return state_ == State::kReady; }
  // True when the connection should be closed now (output flushed where a reply was due).
  bool done() const;
  CloseReason close_reason() const { return reason_; }

 private:
  enum class State { kAuthenticating, kReady, kClosing, kClosed };
  void process();
  void handle_auth(const char* body, size_t n);
  void handle_request(const char* body, size_t n);
  void reply(const std::string& body);
  void close_now(CloseReason reason);
  void close_after_flush(CloseReason reason);

  StoreTable* table_;
  StoreLimits limits_;
  std::string expected_mac_;
  State state_ = State::kAuthenticating;
  CloseReason reason_ = CloseReason::kNone;
  bool peer_eof_ = false;
  std::string in_;
  size_t in_pos_ = 0;
  std::string out_;
  size_t out_pos_ = 0;
  StoreRequest req_;  // reused to avoid reallocating per request
};
