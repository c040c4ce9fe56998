// fuzz_store_server: libFuzzer target feeding arbitrary bytes, as one client's TCP stream, into
// StoreSession — the per-connection logic of StoreServer (comm/store_session.h) — with small
// limits so every limit path (frame size, stored bytes, output backpressure) is reachable.
//
// Input: byte 0 = flags, the rest = the client's stream.
//   bit 0: prepend the correct HMAC frame, so the fuzzer reaches request parsing at once
//          (the nonce and secret are fixed here; on the wire the nonce is random);
//   bit 1: start with the table nearly full (so "store full" is one request away);
//   bit 2: structured mode: the rest is a list of records that build well-formed set / get /
//          add / gather requests (mixed with raw fragments), so deep paths are reached in every run;
//   bits 3-7: seed of the chunking (how the stream is split into reads and how much output is
//          "sent" between them), so partial frames at every boundary get exercised.
// The table always starts with "k" = "v" and "n" = "7", so found-gets and adds to an existing
// counter need only one well-formed request.
// Checked on every step: buffered input and queued output stay within their bounds, stored
// bytes within max_stored_bytes, and the output is a well-formed sequence of frames.
//
// Build and run (clang from Debian):
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     comm/store_protocol.cc comm/store_session.cc tests/fuzz/fuzz_store_server.cc \
//     -o /tmp/store/fuzz && /tmp/store/fuzz -max_total_time=30
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "comm/store_protocol.h"
#include "comm/store_session.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// Records: kind byte, then its fields; a record cut short by the end of input is dropped.
//   0 set:  key byte, length byte L, L value bytes      3 raw frame: length byte L, L bytes
//   1 get:  key byte                                    4 raw bytes: length byte L, L bytes
//   2 add:  key byte, 8 delta bytes (big-endian)        5 set a numeric value: key byte, i64
std::string structured_stream(const uint8_t* p, size_t n) {
  static const char* const kKeys[] = {"k", "n", "filler0", "", "counter", "x"};
  size_t i = 0;
  auto take = [&](size_t k, const uint8_t** out) {
    if (n - i < k) return false;
    *out = p + i;
    i += k;
    return true;
  };
  std::string s;
  const uint8_t* f;
  while (take(1, &f)) {
    const uint8_t kind = f[0] % 7;
    const uint8_t* len;
    const uint8_t* body;
    std::string key;
    if (kind == 0 || kind == 1 || kind == 2 || kind == 5 || kind == 6) {
      const uint8_t* k;
      if (!take(1, &k)) break;
      key = kKeys[k[0] % 6];
    }
    switch (kind) {
      case 0:
        if (!take(1, &len) || !take(len[0], &body)) return s;
        s += encode_frame(encode_set_request(key, std::string(reinterpret_cast<const char*>(body), len[0])));
        break;
      case 1:
        s += encode_frame(encode_get_request(key));
        break;
      case 2:
        if (!take(8, &body)) return s;
        s += encode_frame(encode_add_request(key, get_i64be(reinterpret_cast<const char*>(body))));
        break;
      case 3:
      case 4:
        if (!take(1, &len) || !take(len[0], &body)) return s;
        if (kind == 3) put_u32be(&s, len[0]);
        s.append(reinterpret_cast<const char*>(body), len[0]);
        break;
      case 5:
        if (!take(8, &body)) return s;
        s += encode_frame(encode_set_request(key, std::to_string(get_i64be(reinterpret_cast<const char*>(body)))));
        break;
      case 6:  // a gather of the keys under `key` (as a prefix), wanting 0-3 of them
        if (!take(1, &len)) return s;
        s += encode_frame(encode_gather_request(key, len[0] % 4));
        break;
    }
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::string secret = "fuzz-secret";
  const std::string nonce(kStoreNonceBytes, 'N');

  StoreLimits limits;
  limits.max_frame_bytes = 4096;
  limits.max_stored_bytes = 16 * 1024;
  limits.max_pending_output = 512;
  StoreTable table(limits.max_stored_bytes);
  table.set("k", "v");
  table.set("n", "7");
  if (flags & 2) {
    // Values no longer than a client could send in one frame, until 40 bytes are left.
    for (int i = 0;; ++i) {
      const std::string key = "filler" + std::to_string(i);
      const size_t room = limits.max_stored_bytes - table.stored_bytes();
      const size_t want = std::min<size_t>(room - 64 - key.size() - 40, 4000);
      table.set(key, std::string(want, 'f'));
      if (want < 4000) break;
    }
  }
  StoreSession session(&table, secret, nonce, limits);

  std::string stream;
  if (flags & 1) stream = encode_frame(hmac_sha256(secret, nonce));
  if (flags & 4) {
    stream += structured_stream(data + 1, size - 1);
  } else {
    stream.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  }

  FuzzRng rng{0x9e3779b9u ^ (uint32_t(flags >> 3) * 0x85ebca6bu)};
  const size_t max_reply = 4 + 1 + limits.max_frame_bytes;  // 'F' + the largest value, or a gather
  std::string sent;                                         // every byte the server "sent"
  size_t pos = 0;
  size_t last_chunk = 0;

  auto send_some = [&](size_t limit) {
    const size_t n = std::min(session.output_size(), limit);
    sent.append(session.output_data(), n);
    session.on_output_written(n);
  };
  auto check = [&] {
    FUZZ_CHECK(session.input_size() <= 4 + size_t(limits.max_frame_bytes) + last_chunk);
    FUZZ_CHECK(session.output_size() <= limits.max_pending_output + max_reply + 64);
    FUZZ_CHECK(table.stored_bytes() <= limits.max_stored_bytes);
  };

  for (int steps = 0; steps < 1000000 && !session.done(); ++steps) {
    if (pos < stream.size() && session.wants_input()) {
      const uint32_t r = rng.next();
      size_t n = (r & 3) == 0 ? 1 + (r >> 8) % 4096 : 1 + (r >> 8) % 16;
      n = std::min(n, stream.size() - pos);
      last_chunk = n;
      session.on_input(stream.data() + pos, n);
      pos += n;
      check();
      if (rng.next() & 1) send_some(1 + rng.next() % 700);
    } else if (session.output_size() > 0) {
      send_some(1 + rng.next() % 700);
    } else {
      break;  // everything fed (or input refused with nothing left to send)
    }
    check();
  }
  if (!session.done()) {
    session.on_input_closed();
    for (int i = 0; i < 1000000 && session.output_size() > 0; ++i) send_some(4096);
    FUZZ_CHECK(session.done());
  }
  // Once closed, nothing more is accepted or produced.
  session.on_input("x", 1);
  FUZZ_CHECK(session.output_size() == 0);

  // The output is a sequence of frames: the greeting first, then replies. A connection closed
  // for malformed input may cut the last one short; any other end is on a frame boundary.
  size_t off = 0;
  bool first = true;
  while (sent.size() - off >= 4) {
    const uint32_t len = get_u32be(sent.data() + off);
    FUZZ_CHECK(len <= max_reply);
    if (sent.size() - off - 4 < len) break;
    if (first) {
      FUZZ_CHECK(sent.compare(off + 4, len, std::string(kStoreGreeting) + nonce) == 0);
      first = false;
    }
    off += 4 + len;
  }
  if (session.close_reason() != StoreSession::CloseReason::kMalformed) FUZZ_CHECK(off == sent.size());
  return 0;
}
