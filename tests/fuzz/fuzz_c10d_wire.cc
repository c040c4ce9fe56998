// fuzz_c10d_wire: libFuzzer target for the c10d TCPStore wire format (comm/c10d_wire.h).
//
// Input: byte 0 picks what the rest is: a CHECK reply byte, a GET reply's 8-byte length, a
// key/value pair (split at the first NUL) to encode, or bytes a client sent the server.
// Contract checked: a reply is accepted or refused with a one-line error, never anything else;
// an accepted GET length is <= kC10dMaxValueBytes; READY/NOT_READY are the only accepted CHECK
// bytes. Encoded SET/GET/ADD/CHECK requests decode back (type byte, u64-LE lengths) to exactly
// the key, value and delta given. The server's decoder takes a whole request (never more bytes
// than it was given, nothing from a strict prefix of them), or asks for more, or refuses with one
// line; a request it took re-encodes to exactly the bytes it took (SET/GET/ADD/CHECK).
//
// Build: make fuzz (build-fuzz/fuzz_c10d_wire); run: .ci/fuzz.sh
#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/c10d_wire.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

// Reads a u64-LE length and that many bytes at *pos; false when the bytes run out.
bool take_string(const std::string& b, size_t* pos, std::string* out) {
  if (b.size() - *pos < 8) return false;
  const uint64_t n = get_u64le(b.data() + *pos);
  *pos += 8;
  if (b.size() - *pos < n) return false;
  *out = b.substr(*pos, n);
  *pos += n;
  return true;
}

void check_requests(const std::string& key, const std::string& value, int64_t delta) {
  size_t pos = 1;
  std::string k, v;
  const std::string set = encode_c10d_set(key, value);
  FUZZ_CHECK(set[0] == 0 && take_string(set, &pos, &k) && take_string(set, &pos, &v) && pos == set.size());
  FUZZ_CHECK(k == key && v == value);
  const std::string get = encode_c10d_get(key);
  pos = 1;
  FUZZ_CHECK(get[0] == 2 && take_string(get, &pos, &k) && pos == get.size() && k == key);
  const std::string add = encode_c10d_add(key, delta);
  pos = 1;
  FUZZ_CHECK(add[0] == 3 && take_string(add, &pos, &k) && k == key && add.size() == pos + 8);
  FUZZ_CHECK(static_cast<int64_t>(get_u64le(add.data() + pos)) == delta);
  const std::string check = encode_c10d_check({key, value});
  FUZZ_CHECK(check[0] == 4 && get_u64le(check.data() + 1) == 2);
  pos = 9;
  FUZZ_CHECK(take_string(check, &pos, &k) && take_string(check, &pos, &v) && pos == check.size());
  FUZZ_CHECK(k == key && v == value);
}

std::string reencode(const C10dRequest& r) {
  switch (r.query) {
    case C10dQuery::kSet:
      return encode_c10d_set(r.keys[0], r.value);
    case C10dQuery::kGet:
      return encode_c10d_get(r.keys[0]);
    case C10dQuery::kAdd:
      return encode_c10d_add(r.keys[0], r.delta);
    case C10dQuery::kCheck:
      return encode_c10d_check(r.keys);
    default:
      return "";
  }
}

void check_server_decoder(const std::string& bytes) {
  C10dRequest r;
  size_t used = 0;
  try {
    used = parse_c10d_request(bytes.data(), bytes.size(), &r);
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(one_line(e.what()));
    return;
  }
  FUZZ_CHECK(used <= bytes.size());
  if (used == 0) return;
  C10dRequest again;
  FUZZ_CHECK(parse_c10d_request(bytes.data(), used - 1, &again) == 0);
  for (const auto& k : r.keys) FUZZ_CHECK(k.size() <= kC10dMaxKeyBytes);
  FUZZ_CHECK(r.keys.size() <= kC10dMaxKeysPerRequest);
  const std::string re = reencode(r);
  if (!re.empty()) FUZZ_CHECK(re == bytes.substr(0, used));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      if (rest.empty()) return 0;
      try {
        const bool ready = c10d_check_reply_ready(static_cast<uint8_t>(rest[0]));
        FUZZ_CHECK(ready == (rest[0] == 0) && (rest[0] == 0 || rest[0] == 1));
      } catch (const std::runtime_error& e) {
        FUZZ_CHECK(one_line(e.what()) && rest[0] != 0 && rest[0] != 1);
      }
      return 0;
    case 1:
      if (rest.size() < 8) return 0;
      try {
        FUZZ_CHECK(c10d_get_reply_length(rest.data()) <= kC10dMaxValueBytes);
      } catch (const std::runtime_error& e) {
        FUZZ_CHECK(one_line(e.what()) && get_u64le(rest.data()) > kC10dMaxValueBytes);
      }
      return 0;
    case 3:
      check_server_decoder(rest);
      return 0;
    default: {
      const size_t nul = rest.find('\0');
      const std::string key = rest.substr(0, nul);
      const std::string value = nul == std::string::npos ? "" : rest.substr(nul + 1);
      check_requests(key, value, static_cast<int64_t>(size) * (data[0] & 1 ? -7919 : 104729));
      return 0;
    }
  }
}
