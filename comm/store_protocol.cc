// store_protocol: SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104), randomness and the frame /
// request encoding of the rendezvous store. No OpenSSL: the store must build everywhere ./launch
// does, and these ~150 lines are checked against the NIST and RFC 4231 vectors in test_store.cc.
#include "comm/store_protocol.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "comm/big_endian.h"

namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// Streaming SHA-256: 64-byte blocks, 64 rounds each; the tail is padded with 0x80, zeros and
// the 64-bit big-endian bit length.
class Sha256 {
 public:
  void update(const unsigned char* p, size_t n) {
    total_ += n;
    if (buffered_ > 0) {
      size_t take = std::min(n, sizeof(buf_) - buffered_);
      std::memcpy(buf_ + buffered_, p, take);
      buffered_ += take;
      p += take;
      n -= take;
      if (buffered_ == sizeof(buf_)) {
        block(buf_);
        buffered_ = 0;
      }
    }
    for (; n >= 64; p += 64, n -= 64) block(p);
    if (n > 0) {
      std::memcpy(buf_, p, n);
      buffered_ = n;
    }
  }
  std::string finish() {
    const uint64_t bits = total_ * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (buffered_ < 56) ? 56 - buffered_ : 120 - buffered_;
    for (int i = 0; i < 8; ++i) pad[padlen + i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(pad, padlen + 8);
    std::string out(32, '\0');
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<char>(h_[i] >> (24 - 8 * j));
    return out;
  }

 private:
  void block(const unsigned char* p) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) w[i] = load_u32be(p + 4 * i);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      uint32_t ch = (e & f) ^ (~e & g);
      uint32_t t1 = h + s1 + ch + kK[i] + w[i];
      uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      uint32_t t2 = s0 + maj;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

const unsigned char* bytes(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

std::string sha256(const std::string& data) {
  Sha256 h;
  h.update(bytes(data), data.size());
  return h.finish();
}

// HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), K' = K (or H(K) if longer than a block)
// zero-padded to the 64-byte block.
std::string hmac_sha256(const std::string& key, const std::string& message) {
  std::string k = key.size() > 64 ? sha256(key) : key;
  k.resize(64, '\0');
  unsigned char ipad[64], opad[64];
  for (int i = 0; i < 64; ++i) {
    ipad[i] = static_cast<unsigned char>(k[i]) ^ 0x36;
    opad[i] = static_cast<unsigned char>(k[i]) ^ 0x5c;
  }
  Sha256 inner;
  inner.update(ipad, 64);
  inner.update(bytes(message), message.size());
  std::string inner_digest = inner.finish();
  Sha256 outer;
  outer.update(opad, 64);
  outer.update(bytes(inner_digest), inner_digest.size());
  return outer.finish();
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  // volatile keeps the compiler from turning the loop into an early-exit memcmp.
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  return diff == 0;
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(&out[got], n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // ENOSYS (old kernel) or similar: fall back to the device
    }
  }
  if (got == n) return out;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("cannot open /dev/urandom: ") + std::strerror(errno));
  while (got < n) {
    ssize_t r = ::read(fd, &out[got], n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int err = errno;
      ::close(fd);
      throw std::runtime_error(std::string("cannot read /dev/urandom: ") +
                               (r == 0 ? "end of file" : std::strerror(err)));
    }
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return out;
}

std::string random_secret_hex() { return to_hex(random_bytes(32)); }

std::string to_hex(const std::string& raw) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

void put_u32be(std::string* out, uint32_t v) { append_u32be(out, v); }

void put_i64be(std::string* out, int64_t v) { append_u64be(out, static_cast<uint64_t>(v)); }

uint32_t get_u32be(const char* p) { return load_u32be(p); }

int64_t get_i64be(const char* p) {
  return static_cast<int64_t>(load_u64be(p));  // two's complement (well-defined since C++20, and in practice)
}

std::string encode_frame(const std::string& body) {
  std::string out;
  out.reserve(4 + body.size());
  put_u32be(&out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

namespace {
std::string request_head(char op, const std::string& key, size_t extra) {
  std::string body;
  body.reserve(1 + 4 + key.size() + extra);
  body.push_back(op);
  put_u32be(&body, static_cast<uint32_t>(key.size()));
  body += key;
  return body;
}
}  // namespace

std::string encode_set_request(const std::string& key, const std::string& value) {
  std::string body = request_head('S', key, value.size());
  body += value;
  return body;
}

std::string encode_get_request(const std::string& key) { return request_head('G', key, 0); }

std::string encode_add_request(const std::string& key, int64_t delta) {
  std::string body = request_head('A', key, 8);
  put_i64be(&body, delta);
  return body;
}

std::string encode_gather_request(const std::string& prefix, uint32_t want) {
  std::string body = request_head('P', prefix, 4);
  put_u32be(&body, want);
  return body;
}

std::string encode_gather_found(const GatheredKeys& entries) {
  size_t bytes = 5;
  for (const auto& e : entries) bytes += 8 + e.first.size() + e.second.size();
  std::string body;
  body.reserve(bytes);
  body.push_back('F');
  put_u32be(&body, static_cast<uint32_t>(entries.size()));
  for (const auto& e : entries) {
    put_u32be(&body, static_cast<uint32_t>(e.first.size()));
    body += e.first;
    put_u32be(&body, static_cast<uint32_t>(e.second.size()));
    body += e.second;
  }
  return body;
}

bool parse_gather_reply(const char* body, size_t n, GatheredKeys* entries, uint32_t* count) {
  entries->clear();
  if (n < 5 || (body[0] != 'N' && body[0] != 'F')) return false;
  *count = get_u32be(body + 1);
  if (body[0] == 'N') return n == 5;
  size_t at = 5;
  // Each entry takes at least 8 bytes: a count past what the body can hold is malformed.
  if (*count > (n - at) / 8) return false;
  // Entries are read into `got` and handed over only when the whole body is well-formed.
  GatheredKeys got;
  for (uint32_t i = 0; i < *count; ++i) {
    std::string part[2];
    for (std::string& p : part) {
      if (n - at < 4) return false;
      const uint32_t len = get_u32be(body + at);
      at += 4;
      if (len > n - at) return false;
      p.assign(body + at, len);
      at += len;
    }
    got.emplace_back(std::move(part[0]), std::move(part[1]));
  }
  if (at != n) return false;
  entries->swap(got);
  return true;
}

bool parse_store_request(const char* body, size_t n, StoreRequest* req) {
  if (n < 5) return false;
  const char op = body[0];
  if (op != 'S' && op != 'G' && op != 'A' && op != 'P') return false;
  const uint32_t keylen = get_u32be(body + 1);
  const size_t rest = n - 5;
  if (keylen > rest) return false;
  const char* key = body + 5;
  const char* tail = key + keylen;
  const size_t tail_len = rest - keylen;
  switch (op) {
    case 'S':
      req->value.assign(tail, tail_len);
      break;
    case 'G':
      if (tail_len != 0) return false;
      req->value.clear();
      break;
    case 'A':
      if (tail_len != 8) return false;
      req->delta = get_i64be(tail);
      req->value.clear();
      break;
    case 'P':
      if (tail_len != 4) return false;
      req->want = get_u32be(tail);
      req->value.clear();
      break;
  }
  req->op = op;
  req->key.assign(key, keylen);
  return true;
}

bool parse_decimal_i64(const std::string& text, int64_t* v) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
  }
  if (i == text.size()) return false;
  if (text[i] == '0' && text.size() - i > 1) return false;               // leading zeros
  if (negative && text.size() - i == 1 && text[i] == '0') return false;  // "-0"
  // Accumulate as a negative number so INT64_MIN parses without overflow.
  int64_t acc = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    const int digit = c - '0';
    if (acc < (INT64_MIN + digit) / 10) return false;
    acc = acc * 10 - digit;
  }
  if (!negative) {
    if (acc == INT64_MIN) return false;
    acc = -acc;
  }
  *v = acc;
  return true;
}

std::string printable_key(const std::string& key) {
  static const char kDigits[] = "0123456789abcdef";
  constexpr size_t kMaxShown = 200;
  std::string out;
  for (size_t i = 0; i < key.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  if (key.size() > kMaxShown) out += "...(" + std::to_string(key.size()) + " bytes)";
  return out;
}
