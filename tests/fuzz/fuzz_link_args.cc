// fuzz_link_args: libFuzzer target for tests/tool_tap_link's command line and link
// (tests/link_model.h).
//
// Input: the command line's arguments separated by NUL bytes; the last 16 bytes, when there are
// that many, also drive the link: (arrival step, frame size) pairs fed to a LinkDirection built from
// the parsed spec.
// Contract checked: parse_link_args never throws; it returns "" exactly when *out was filled, with
// every required field non-empty, netns_a != netns_b, the tap 1-15 bytes without '/', ':' or space,
// delay 0..10 s, bandwidth 0 (unlimited) or 1..1e12 B/s, queue 64 KiB..1 GiB; a refusal is one line
// and leaves *out untouched. Rebuilding the command line from the result parses to the same spec.
// The link never sends a frame before it arrives plus the delay, keeps frames in order, and, with
// a bandwidth, never lets more than queue_bytes wait.
//
// Build: make fuzz (build-fuzz/fuzz_link_args); run: .ci/fuzz.sh
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_common.h"
#include "tests/link_model.h"

namespace {

using link_model::LinkArgs;
using link_model::LinkDirection;

void check_link(const LinkArgs& a, const uint8_t* d, size_t n) {
  LinkDirection link(a.spec);
  int64_t now = 0, last_out = -1;
  for (size_t i = 0; i + 1 < n; i += 2) {
    now += int64_t(d[i]) * 100000;                       // up to 25.5 ms between frames
    const int64_t bytes = 60 + int64_t(d[i + 1]) * 256;  // 60 B to 65 KB
    const int64_t out = link.admit(now, bytes);
    if (out < 0) {
      FUZZ_CHECK(a.spec.bytes_per_s > 0);
      continue;
    }
    FUZZ_CHECK(out >= now + a.spec.delay_ns);
    FUZZ_CHECK(out >= last_out);
    if (a.spec.bytes_per_s > 0) {
      const int64_t waiting = (out - a.spec.delay_ns - now) * a.spec.bytes_per_s / 1000000000 - bytes;
      FUZZ_CHECK(waiting <= a.spec.queue_bytes);
    }
    last_out = out;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '\0') {
      args.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  LinkArgs a;
  a.tap = "untouched";
  const std::string err = link_model::parse_link_args(args, &a);
  if (!err.empty()) {
    FUZZ_CHECK(a.tap == "untouched" && a.netns_a.empty());
    return 0;
  }
  FUZZ_CHECK(!a.netns_a.empty() && !a.netns_b.empty() && !a.pidfile.empty() && a.netns_a != a.netns_b);
  FUZZ_CHECK(!a.tap.empty() && a.tap.size() <= 15 && a.tap.find_first_of("/: \t\n") == std::string::npos);
  FUZZ_CHECK(a.spec.delay_ns >= 0 && a.spec.delay_ns <= int64_t(10000) * 1000000);
  FUZZ_CHECK(a.spec.bytes_per_s >= 0 && a.spec.bytes_per_s <= int64_t(1000000000000));
  FUZZ_CHECK(a.spec.queue_bytes >= 65536 && a.spec.queue_bytes <= (int64_t(1) << 30));
  LinkArgs again;
  std::vector<std::string> rebuilt = {
      "--netns-a",
      a.netns_a,
      "--netns-b",
      a.netns_b,
      "--tap",
      a.tap,
      "--pidfile",
      a.pidfile,
      "--delay-ms",
      std::to_string(a.spec.delay_ns / 1000000) + "." + std::to_string(1000000 + a.spec.delay_ns % 1000000).substr(1),
      "--queue-bytes",
      std::to_string(a.spec.queue_bytes)};
  if (a.spec.bytes_per_s > 0) {
    rebuilt.push_back("--bandwidth");
    rebuilt.push_back(std::to_string(a.spec.bytes_per_s));
  }
  FUZZ_CHECK(link_model::parse_link_args(rebuilt, &again).empty());
  FUZZ_CHECK(again.spec.delay_ns == a.spec.delay_ns && again.spec.bytes_per_s == a.spec.bytes_per_s &&
             again.spec.queue_bytes == a.spec.queue_bytes && again.tap == a.tap);
  if (size >= 16) check_link(a, data + size - 16, 16);
  return 0;
}
