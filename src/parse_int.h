// parse_int: the one strict decimal integer reader behind the flags, environment variables and
// protocol fields that accept only digits (./launch's counts and ports, rank variables,
// torchrun's, hostfile slots, agent status lines). Pure and header-only; each caller turns the
// outcome into its own one-line error naming the flag or variable.
#pragma once
#include <cerrno>
#include <cstdlib>
#include <string>

enum class IntText {
  kOk,
  kEmpty,       // ""
  kNotDigits,   // anything but [sign] digits: blanks, a second sign, a sign alone, letters
  kOutOfRange,  // digits, but outside [lo, hi] (or past long long)
};

// Which leading sign a text may have.
enum class IntSign { kNone, kMinus, kPlusOrMinus };

// Reads all of s as one decimal integer in [lo, hi] into *out (untouched unless kOk).
inline IntText parse_decimal(const std::string& s, IntSign sign, long long lo, long long hi, long long* out) {
  if (s.empty()) return IntText::kEmpty;
  size_t i = 0;
  if ((s[0] == '-' && sign != IntSign::kNone) || (s[0] == '+' && sign == IntSign::kPlusOrMinus)) i = 1;
  if (i == s.size()) return IntText::kNotDigits;
  for (size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return IntText::kNotDigits;
  errno = 0;
  long long x = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE || x < lo || x > hi) return IntText::kOutOfRange;
  *out = x;
  return IntText::kOk;
}

// The same for an int-sized result; true only for kOk.
inline bool parse_decimal_int(const std::string& s, IntSign sign, long long lo, long long hi, int* out) {
  long long x = 0;
  if (parse_decimal(s, sign, lo, hi, &x) != IntText::kOk) return false;
  *out = static_cast<int>(x);
  return true;
}
