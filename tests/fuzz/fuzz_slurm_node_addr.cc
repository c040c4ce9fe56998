// fuzz_slurm_node_addr: libFuzzer target for the NodeAddr parser of `scontrol -o show node`
// output (comm/slurm_node_addr.h).
//
// Input: split at the first NUL into scontrol's output and a comma-separated list of the nodes
// asked for.
// Contract checked: addresses are returned, one per node asked for, or SlurmNodeAddrError is
// thrown with one non-empty line, never anything else; every address is non-empty, at most
// kSlurmMaxNodeAddr characters of [A-Za-z0-9.-_:], and is the value of a NodeAddr= word of a
// line of the output that starts with "NodeName=<that node>".
//
// Build: make fuzz (build-fuzz/fuzz_slurm_node_addr); run: .ci/fuzz.sh
#include <cstdint>
#include <string>
#include <vector>

#include "comm/slurm_node_addr.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// True when some line of output starts with "NodeName=" + node + " " (or ends there) and holds
// the word "NodeAddr=" + addr.
bool some_line_says(const std::string& output, const std::string& node, const std::string& addr) {
  size_t at = 0;
  while (at <= output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    const std::string line = " " + output.substr(at, end - at) + " ";
    at = end + 1;
    if (line.compare(0, 10 + node.size() + 1, " NodeName=" + node + " ") != 0 && line != " NodeName=" + node + " ")
      continue;
    if (line.find(" NodeAddr=" + addr + " ") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string output = in.substr(0, nul);
  std::vector<std::string> nodes;
  if (nul != std::string::npos) {
    std::string list = in.substr(nul + 1), cur;
    for (char c : list) {
      if (c == ',') {
        nodes.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(c);
      }
    }
    nodes.push_back(cur);
  }
  std::vector<std::string> addrs;
  try {
    addrs = parse_scontrol_node_addrs(output, nodes);
  } catch (const SlurmNodeAddrError& e) {
    const std::string msg = e.what();
    FUZZ_CHECK(!msg.empty() && msg.find('\n') == std::string::npos);
    return 0;
  }
  FUZZ_CHECK(addrs.size() == nodes.size());
  for (size_t k = 0; k < addrs.size(); ++k) {
    const std::string& a = addrs[k];
    FUZZ_CHECK(!a.empty() && a.size() <= kSlurmMaxNodeAddr);
    for (char c : a)
      FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                 c == '_' || c == ':');
    FUZZ_CHECK(some_line_says(output, nodes[k], a));
  }
  return 0;
}
