// fuzz_common: small helpers shared by the libFuzzer targets in tests/fuzz/ (header only).
//
// FUZZ_CHECK(cond) aborts with the condition's text, so libFuzzer saves the input as a crash.
// FuzzRng is a small deterministic generator for targets that derive chunking from a seed byte.
// FuzzInput hands out the fuzzer's bytes field by field (zeros once it runs dry), so structured
// targets can build well-formed inputs and then damage them where the bytes say.
// fuzz_skip_known(): true when BARESGD_FUZZ_SKIP_KNOWN=1 is set — targets then steer around
// bugs already reported (each target says which), so the rest of the parser keeps being fuzzed
// while a fix is pending. .ci/fuzz.sh runs strictly unless told otherwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

[[noreturn]] inline void fuzz_violated(const char* file, int line, const char* what) {
  std::fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", file, line, what);
  std::abort();
}

#define FUZZ_CHECK(cond)                                   \
  do {                                                     \
    if (!(cond)) fuzz_violated(__FILE__, __LINE__, #cond); \
  } while (0)

inline bool fuzz_skip_known() {
  static const bool skip = [] {
    const char* v = std::getenv("BARESGD_FUZZ_SKIP_KNOWN");
    return v && std::strcmp(v, "1") == 0;
  }();
  return skip;
}

// xorshift32: a deterministic stream of numbers seeded from the input (chunk sizes and the like).
struct FuzzRng {
  uint32_t s;
  uint32_t next() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  }
};

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  size_t left() const { return n_ - i_; }
  uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  uint16_t u16() { return uint16_t(u8() | (uint16_t(u8()) << 8)); }
  uint32_t u32() { return uint32_t(u16()) | (uint32_t(u16()) << 16); }
  uint64_t u64() { return uint64_t(u32()) | (uint64_t(u32()) << 32); }
  bool bit() { return u8() & 1; }
  // Up to max bytes (fewer when the input runs out).
  std::string bytes(size_t max) {
    size_t k = max < left() ? max : left();
    std::string s(reinterpret_cast<const char*>(p_ + i_), k);
    i_ += k;
    return s;
  }
  std::string rest() { return bytes(left()); }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

// Splits bytes on NUL into words (argv style); a trailing NUL does not add an empty word, but
// empty words in the middle are kept ("a\0\0b" -> "a", "", "b").
inline std::vector<std::string> fuzz_split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t z = s.find('\0', pos);
    if (z == std::string::npos) {
      out.push_back(s.substr(pos));
      break;
    }
    out.push_back(s.substr(pos, z - pos));
    pos = z + 1;
  }
  return out;
}
