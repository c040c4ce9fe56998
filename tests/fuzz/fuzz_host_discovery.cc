// fuzz_host_discovery: libFuzzer target for a --host-discovery-script's output and the elastic
// host choice fed with it (launcher/host_discovery.h, launcher/elastic_hosts.h).
//
// Input: byte 0 = --slots-per-host (1..8), bytes 1-2 = --min-np and --max-np (0..15), byte 3 =
// which printed hosts fail (bit k: the k-th host fails twice), the rest = the script's output.
// Contract checked: the parser returns or throws HostError, nothing else, with a one-line message
// naming the script and a line number; accepted hosts have valid names (no leading '-', no
// whitespace, control characters, ',' or ':'), slots >= 1, no name twice, printed order kept.
// The policy: next_np() is 0 or in [max(1, min_np), max_np or the slots]; next_hosts() gives
// exactly next_np() slots over usable (not blacklisted) hosts in printed order, each within its
// discovered slots; a host that failed twice is blacklisted and gets no ranks.
//
// Build: make fuzz (build-fuzz/fuzz_host_discovery); run: .ci/fuzz.sh
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/host_discovery.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

void check_hosts(const std::vector<HostSlots>& hosts) {
  std::set<std::string> names;
  for (const HostSlots& h : hosts) {
    FUZZ_CHECK(!h.name.empty() && h.name[0] != '-' && h.slots >= 1);
    for (char c : h.name) {
      const unsigned char u = static_cast<unsigned char>(c);
      FUZZ_CHECK(u > 0x20 && u != 0x7f && c != ',' && c != ':');
    }
    FUZZ_CHECK(names.insert(h.name).second);
  }
}

void check_policy(const std::vector<HostSlots>& hosts, int min_np, int max_np, uint8_t failing) {
  ElasticHosts e({min_np, max_np, 2});
  e.update(hosts);
  for (size_t k = 0; k < hosts.size() && k < 8; ++k)
    if (failing & (1u << k)) {
      e.record_failure(hosts[k].name, "x");
      FUZZ_CHECK(!e.record_failure(hosts[k].name, "x").empty());
    }
  const int np = e.next_np();
  int total = 0;
  size_t at = 0;
  for (const HostSlots& h : e.next_hosts()) {
    FUZZ_CHECK(!e.blacklisted(h.name) && h.slots >= 1);
    while (at < hosts.size() && hosts[at].name != h.name) ++at;
    FUZZ_CHECK(at < hosts.size() && h.slots <= hosts[at].slots);
    total += h.slots;
  }
  FUZZ_CHECK(total == np);
  FUZZ_CHECK(np == 0 || (np >= std::max(1, min_np) && np <= e.usable_slots() && (max_np == 0 || np <= max_np)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const int slots = 1 + in.u8() % 8, min_np = in.u8() % 16, max_np = in.u8() % 16;
  const uint8_t failing = in.u8();
  std::vector<HostSlots> hosts;
  try {
    hosts = parse_discovery_output(in.rest(), "s", slots);
  } catch (const HostError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.find('\n') == std::string::npos && m.find('\r') == std::string::npos);
    FUZZ_CHECK(m.rfind("--host-discovery-script s: line ", 0) == 0);
    return 0;
  }
  check_hosts(hosts);
  check_policy(hosts, min_np, max_np, failing);
  return 0;
}
