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
