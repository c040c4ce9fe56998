// blacklist_cooldown: parsing the range and the length of a host's cooldown (see
// blacklist_cooldown.h).
#include "launcher/blacklist_cooldown.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "launcher/options.h"
#include "src/parse_int.h"
#include "src/shown_text.h"

namespace {

const char kFlag[] = "--blacklist-cooldown-range";

int cooldown_word(const char* which, const std::string& v) {
  long long x = 0;
  const IntText got = parse_decimal(v, IntSign::kPlusOrMinus, LLONG_MIN, LLONG_MAX, &x);
  const std::string shown = "'" + shown_text(v) + "'";
  if (got != IntText::kOk && got != IntText::kOutOfRange)
    throw UsageError(std::string(kFlag) + " " + which + " " + shown + " is not a whole number of seconds", false);
  if (got == IntText::kOutOfRange || x < kCooldownFloorS || x > kCooldownCeilingS)
    throw UsageError(std::string(kFlag) + " " + which + " must be " + std::to_string(kCooldownFloorS) + ".." +
                         std::to_string(kCooldownCeilingS) + " seconds (got " + shown_text(v) + ")",
                     false);
  return static_cast<int>(x);
}

}  // namespace

CooldownRange parse_cooldown_range(const std::string& min_word, const std::string& max_word) {
  CooldownRange r;
  r.min_s = cooldown_word("MIN", min_word);
  r.max_s = cooldown_word("MAX", max_word);
  if (r.min_s > r.max_s)
    throw UsageError(
        std::string(kFlag) + " MIN " + std::to_string(r.min_s) + " is more than MAX " + std::to_string(r.max_s), false);
  return r;
}

double cooldown_seconds(const CooldownRange& r, int n, double u) {
  const double grown = std::ldexp(static_cast<double>(r.min_s), std::min(std::max(n, 0), 30)) + u * r.min_s;
  return std::max<double>(r.min_s, std::min<double>(r.max_s, grown));
}

std::string cooldown_seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

std::string cooldown_flag_text(const CooldownRange& r) {
  return std::string(kFlag) + " " + std::to_string(r.min_s) + " " + std::to_string(r.max_s);
}
