// c10d_wire: PyTorch 1.13's TCPStore requests and replies (see c10d_wire.h).
#include "comm/c10d_wire.h"

#include <cstdio>
#include <stdexcept>

namespace {

void put_string(std::string* out, const std::string& s) {
  put_u64le(out, s.size());
  *out += s;
}

std::string query(C10dQuery q) { return std::string(1, static_cast<char>(q)); }

}  // namespace

uint64_t get_u64le(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void put_u64le(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string encode_c10d_set(const std::string& key, const std::string& value) {
  std::string out = query(C10dQuery::kSet);
  put_string(&out, key);
  put_string(&out, value);
  return out;
}

std::string encode_c10d_get(const std::string& key) {
  std::string out = query(C10dQuery::kGet);
  put_string(&out, key);
  return out;
}

std::string encode_c10d_add(const std::string& key, int64_t delta) {
  std::string out = query(C10dQuery::kAdd);
  put_string(&out, key);
  put_u64le(&out, static_cast<uint64_t>(delta));
  return out;
}

std::string encode_c10d_check(const std::vector<std::string>& keys) {
  std::string out = query(C10dQuery::kCheck);
  put_u64le(&out, keys.size());
  for (const auto& k : keys) put_string(&out, k);
  return out;
}

uint64_t c10d_get_reply_length(const char* head) {
  const uint64_t n = get_u64le(head);
  if (n > kC10dMaxValueBytes)
    throw std::runtime_error("announced a " + std::to_string(n) + "-byte value, over the limit of " +
                             std::to_string(kC10dMaxValueBytes) + " (not a c10d TCPStore?)");
  return n;
}

bool c10d_check_reply_ready(uint8_t byte) {
  if (byte == kC10dReady) return true;
  if (byte == kC10dNotReady) return false;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", byte);
  throw std::runtime_error(std::string("answered CHECK with ") + hex +
                           ", neither READY nor NOT_READY (not a c10d TCPStore?)");
}

// ---- The server side: decoding a request that may have arrived only in part. ----
//
// The decoder starts again from the request's first byte each time more bytes arrive. That is
// cheap: it steps over each field with its length (it never scans the bytes of a key or value),
// so a 64 MiB SET arriving in 1 000 reads costs 1 000 times a few comparisons. Every length is
// checked against its limit when its 8 bytes are in, before the bytes it announces are awaited.

namespace {

// Walks buf[0, n): each take_* returns false when the bytes run out (the request is not whole).
class RequestCursor {
 public:
  RequestCursor(const char* buf, size_t n) : buf_(buf), n_(n) {}
  size_t used() const { return pos_; }

  bool take_u64(uint64_t* v) {
    if (n_ - pos_ < 8) return false;
    *v = get_u64le(buf_ + pos_);
    pos_ += 8;
    return true;
  }
  // A u64 length, refused over `limit` (what: "key", "value"), then that many bytes.
  bool take_string(std::string* out, uint64_t limit, const char* what, C10dQuery q) {
    uint64_t len = 0;
    if (!take_u64(&len)) return false;
    if (len > limit)
      throw std::runtime_error(c10d_query_name(static_cast<uint8_t>(q)) + " request announced a " +
                               std::to_string(len) + "-byte " + what + ", over the limit of " + std::to_string(limit));
    if (n_ - pos_ < len) return false;
    out->assign(buf_ + pos_, len);
    pos_ += len;
    return true;
  }
  bool take_key(C10dRequest* r) {
    r->keys.emplace_back();
    return take_string(&r->keys.back(), kC10dMaxKeyBytes, "key", r->query);
  }
  bool take_value(std::string* out, C10dQuery q) { return take_string(out, kC10dMaxValueBytes, "value", q); }
  // CHECK and WAIT: a u64 count, then that many keys.
  bool take_key_list(C10dRequest* r) {
    uint64_t count = 0;
    if (!take_u64(&count)) return false;
    if (count > kC10dMaxKeysPerRequest)
      throw std::runtime_error(c10d_query_name(static_cast<uint8_t>(r->query)) + " request named " +
                               std::to_string(count) + " keys, over the limit of " +
                               std::to_string(kC10dMaxKeysPerRequest));
    for (uint64_t i = 0; i < count; ++i)
      if (!take_key(r)) return false;
    return true;
  }

 private:
  const char* buf_;
  size_t n_;
  size_t pos_ = 0;
};

// The arguments of each query after its type byte; false when they have not all arrived.
bool take_arguments(RequestCursor* c, C10dRequest* r) {
  switch (r->query) {
    case C10dQuery::kSet:
      return c->take_key(r) && c->take_value(&r->value, r->query);
    case C10dQuery::kCompareSet:
      return c->take_key(r) && c->take_value(&r->value, r->query) && c->take_value(&r->desired, r->query);
    case C10dQuery::kGet:
    case C10dQuery::kWatchKey:
    case C10dQuery::kDeleteKey:
      return c->take_key(r);
    case C10dQuery::kAdd: {
      uint64_t delta = 0;
      if (!c->take_key(r) || !c->take_u64(&delta)) return false;
      r->delta = static_cast<int64_t>(delta);
      return true;
    }
    case C10dQuery::kCheck:
    case C10dQuery::kWait:
      return c->take_key_list(r);
    case C10dQuery::kGetNumKeys:
      return true;
  }
  return false;  // not reached: the type byte was checked
}

}  // namespace

std::string c10d_query_name(uint8_t query) {
  static const char* const kNames[] = {"SET",  "COMPARE_SET", "GET",       "ADD",       "CHECK",
                                       "WAIT", "GETNUMKEYS",  "WATCH_KEY", "DELETE_KEY"};
  if (query < sizeof kNames / sizeof kNames[0]) return kNames[query];
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", query);
  return std::string("query ") + hex;
}

size_t parse_c10d_request(const char* buf, size_t n, C10dRequest* out) {
  if (n == 0) return 0;
  const uint8_t type = static_cast<uint8_t>(buf[0]);
  if (type > static_cast<uint8_t>(C10dQuery::kDeleteKey))
    throw std::runtime_error("unknown " + c10d_query_name(type) + " (not a c10d TCPStore client?)");
  C10dRequest r;
  r.query = static_cast<C10dQuery>(type);
  RequestCursor cursor(buf + 1, n - 1);
  if (!take_arguments(&cursor, &r)) return 0;
  *out = std::move(r);
  return 1 + cursor.used();
}

std::string encode_c10d_value_reply(const std::string& value) {
  std::string out;
  put_string(&out, value);
  return out;
}

std::string encode_c10d_i64_reply(int64_t v) {
  std::string out;
  put_u64le(&out, static_cast<uint64_t>(v));
  return out;
}
