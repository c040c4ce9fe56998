// what_if_spec: --straggler, --link-delay and --link-bandwidth values (see what_if_spec.h).
#include "src/what_if_spec.h"

#include <stdexcept>
#include <utility>
#include <vector>

namespace {

// A plain decimal: digits, at most one '.', at least one digit, at most 15 significant
// characters (so no overflow and no exponent, sign, spaces or "inf"). -1 when it is not one.
double plain_decimal(const std::string& s) {
  if (s.empty() || s.size() > 15) return -1;
  double whole = 0, scale = 0;
  bool digit = false;
  for (char c : s) {
    if (c == '.') {
      if (scale != 0) return -1;
      scale = 1;
    } else if (c >= '0' && c <= '9') {
      digit = true;
      whole = whole * 10 + (c - '0');
      if (scale != 0) scale *= 10;
    } else {
      return -1;
    }
  }
  if (!digit) return -1;
  return scale != 0 ? whole / scale : whole;
}

// The unit part of a rate as bytes per second per unit, or 0 when it is not a known unit.
double unit_bytes_per_s(const std::string& unit) {
  static const std::vector<std::pair<const char*, double>> units = {
      {"bit", 1.0 / 8}, {"kbit", 1e3 / 8}, {"Kbit", 1e3 / 8}, {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8},
      {"B/s", 1},       {"kB/s", 1e3},     {"KB/s", 1e3},     {"MB/s", 1e6},     {"GB/s", 1e9},
  };
  std::string u = unit;  // "Mbit/s" and "Mbitps" are "Mbit"
  for (const char* tail : {"bit/s", "bitps"})
    if (u.size() >= 5 && u.compare(u.size() - 5, 5, tail) == 0) u = u.substr(0, u.size() - 2);
  for (const auto& [name, bytes] : units)
    if (u == name) return bytes;
  return 0;
}

}  // namespace

StragglerSpec parse_straggler(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw std::invalid_argument("expected RANK:MS or RANK:xFACTOR (e.g. 2:5 or 2:x3)");
  const std::string rank = text.substr(0, colon), how = text.substr(colon + 1);
  const double r = plain_decimal(rank);
  if (r < 0 || rank.find('.') != std::string::npos || r > 65535)
    throw std::invalid_argument("rank '" + rank + "' is not a rank (0..65535)");
  StragglerSpec s;
  s.rank = int(r);
  if (!how.empty() && how[0] == 'x') {
    const double f = plain_decimal(how.substr(1));
    if (!(f > 1 && f <= 1000)) throw std::invalid_argument("factor '" + how + "' is not xF with 1 < F <= 1000");
    s.factor = f;
    return s;
  }
  const double ms = plain_decimal(how);
  if (!(ms >= 0 && ms <= 60000)) throw std::invalid_argument("'" + how + "' is not milliseconds in [0, 60000]");
  s.sleep_ms = ms;
  return s;
}

double parse_link_delay_ms(const std::string& text) {
  const double ms = plain_decimal(text);
  if (!(ms >= 0 && ms <= 10000)) throw std::invalid_argument("'" + text + "' is not milliseconds in [0, 10000]");
  return ms;
}

double parse_link_rate(const std::string& text) {
  size_t n = 0;
  while (n < text.size() && ((text[n] >= '0' && text[n] <= '9') || text[n] == '.')) ++n;
  const double number = plain_decimal(text.substr(0, n));
  if (number < 0) throw std::invalid_argument("'" + text + "' does not start with a number (e.g. 100Mbit, 10MB/s)");
  const double per_unit = unit_bytes_per_s(text.substr(n));
  if (per_unit == 0)
    throw std::invalid_argument("'" + text + "' has no known unit (bit, kbit, Mbit, Gbit or B/s, kB/s, MB/s, GB/s)");
  const double rate = number * per_unit;
  if (!(rate >= 1 && rate <= 1e12)) throw std::invalid_argument("'" + text + "' is not between 1 B/s and 1000 GB/s");
  return rate;
}
