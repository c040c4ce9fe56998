// link_model.h: the emulated network link of tests/tool_tap_link.cc without its I/O: when a frame
// that enters the link comes out of it (a FIFO transmitter at a bandwidth, then a fixed delay), which
// frames a full queue drops, and the tool's command line. Pure, so tests/test_link_model.cc drives it
// with a fake clock and tests/fuzz/fuzz_link_args.cc fuzzes the parser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/parse_int.h"

namespace link_model {

struct LinkSpec {
  int64_t delay_ns = 0;                    // added each way, after the frame's transmission
  int64_t bytes_per_s = 0;                 // the transmitter's rate; 0 = unlimited (no queue)
  int64_t queue_bytes = int64_t(4) << 20;  // bytes waiting for the transmitter beyond which frames drop
};

// One direction of the link. A frame of B bytes arriving at t waits for the frames before it,
// takes B / bytes_per_s to transmit, then delay_ns to arrive: it leaves the link at
// max(t, busy_until) + B / rate + delay. A frame that finds more than queue_bytes still waiting is
// dropped, as a switch's full buffer drops it.
class LinkDirection {
 public:
  explicit LinkDirection(const LinkSpec& spec) : spec_(spec) {}
  // The time the frame leaves the link, or -1 when it is dropped.
  int64_t admit(int64_t now_ns, int64_t bytes) {
    if (spec_.bytes_per_s <= 0) return now_ns + spec_.delay_ns;
    const int64_t start = busy_until_ns_ > now_ns ? busy_until_ns_ : now_ns;
    const int64_t backlog = (start - now_ns) * spec_.bytes_per_s / 1000000000;  // bytes not yet sent
    if (backlog + bytes > spec_.queue_bytes) return -1;
    busy_until_ns_ = start + transmit_ns(bytes);
    return busy_until_ns_ + spec_.delay_ns;
  }

 private:
  int64_t transmit_ns(int64_t bytes) const {
    return int64_t((__int128)bytes * 1000000000 / spec_.bytes_per_s);  // whole ns, < 2^63 for B < 2^33
  }
  LinkSpec spec_;
  int64_t busy_until_ns_ = 0;
};

// tool_tap_link's command line: the two namespaces' /run/netns files, the tap's name in each, the
// pid file written once both taps exist, and the link.
struct LinkArgs {
  std::string netns_a, netns_b, tap, pidfile;
  LinkSpec spec;
};

inline const char* link_usage() {
  return "usage: tool_tap_link --netns-a FILE --netns-b FILE --tap NAME --pidfile FILE [--delay-ms MS] "
         "[--bandwidth BYTES_PER_S[K|M|G]] [--queue-bytes N]";
}

namespace detail {

// "20", "0.25": milliseconds as whole nanoseconds (decimals past the 6th dropped), -1 when
// malformed or too big.
inline int64_t milliseconds_ns(const std::string& s) {
  if (s.empty() || s.size() > 15) return -1;
  int64_t whole = 0, frac = 0, frac_scale = 1;
  bool dot = false, any_digit = false;
  for (char c : s) {
    if (c == '.' && !dot) {
      dot = true;
    } else if (c >= '0' && c <= '9') {
      any_digit = true;
      if (!dot) {
        whole = whole * 10 + (c - '0');
      } else if (frac_scale < 1000000) {
        frac = frac * 10 + (c - '0');
        frac_scale *= 10;
      }
    } else {
      return -1;
    }
  }
  if (!any_digit || s.back() == '.' || whole > INT64_MAX / 1000000 / 2) return -1;
  return whole * 1000000 + frac * (1000000 / frac_scale);
}

// "12500000", "100M": bytes per second (K = 1e3, M = 1e6, G = 1e9, as wirefilter), 1 to 1e12; -1
// when malformed.
inline int64_t bytes_per_s(const std::string& s) {
  if (s.empty()) return -1;
  int64_t scale = 1;
  switch (s.back()) {
    case 'K':
      scale = 1000;
      break;
    case 'M':
      scale = 1000000;
      break;
    case 'G':
      scale = 1000000000;
      break;
    default:
      break;
  }
  long long v = 0;
  const std::string digits = scale == 1 ? s : s.substr(0, s.size() - 1);
  if (parse_decimal(digits, IntSign::kNone, 1, 1000000000000LL / scale, &v) != IntText::kOk) return -1;
  return v * scale;
}

}  // namespace detail

// Parses args (without the program's name) into out: "" when they are valid, else one line naming
// the argument that is wrong.
inline std::string parse_link_args(const std::vector<std::string>& args, LinkArgs* out) {
  LinkArgs a;
  for (size_t i = 0; i < args.size(); i += 2) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) return flag + " needs a value";
    const std::string& v = args[i + 1];
    if (flag == "--netns-a" || flag == "--netns-b" || flag == "--pidfile") {
      if (v.empty()) return flag + " needs a file";
      (flag == "--netns-a" ? a.netns_a : flag == "--netns-b" ? a.netns_b : a.pidfile) = v;
    } else if (flag == "--tap") {
      if (v.empty() || v.size() > 15 || v.find_first_of("/ :\t\n") != std::string::npos)
        return "--tap '" + v + "' is not an interface name (1-15 characters, no '/', ':' or space)";
      a.tap = v;
    } else if (flag == "--delay-ms") {
      const int64_t ns = detail::milliseconds_ns(v);
      if (ns < 0 || ns > int64_t(10000) * 1000000) return "--delay-ms '" + v + "' is not 0 to 10000 milliseconds";
      a.spec.delay_ns = ns;
    } else if (flag == "--bandwidth") {
      a.spec.bytes_per_s = detail::bytes_per_s(v);
      if (a.spec.bytes_per_s < 0)
        return "--bandwidth '" + v + "' is not bytes per second (e.g. 12500000 or 100M, at most 1000G)";
    } else if (flag == "--queue-bytes") {
      long long q = 0;
      if (parse_decimal(v, IntSign::kNone, 65536, int64_t(1) << 30, &q) != IntText::kOk)
        return "--queue-bytes '" + v + "' is not 65536 to 1073741824 bytes";
      a.spec.queue_bytes = q;
    } else {
      return "unknown option '" + flag + "'";
    }
  }
  if (a.netns_a.empty() || a.netns_b.empty() || a.tap.empty() || a.pidfile.empty())
    return "--netns-a, --netns-b, --tap and --pidfile are required";
  if (a.netns_a == a.netns_b) return "--netns-a and --netns-b are the same namespace '" + a.netns_a + "'";
  *out = a;
  return "";
}

}  // namespace link_model
