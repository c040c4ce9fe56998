// slurm_node_addr: NodeAddr out of `scontrol -o show node` (see slurm_node_addr.h).
#include "comm/slurm_node_addr.h"

#include <map>

#include "src/shown_text.h"

namespace {

// The value of the first space-separated word of line that starts with key ("" and false when
// there is none).
bool word_value(const std::string& line, const std::string& key, std::string* value) {
  size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && line[at] == ' ') ++at;
    size_t end = line.find(' ', at);
    if (end == std::string::npos) end = line.size();
    if (line.compare(at, key.size(), key) == 0) {
      *value = line.substr(at + key.size(), end - at - key.size());
      return true;
    }
    at = end;
  }
  return false;
}

bool valid_addr(const std::string& a) {
  if (a.empty() || a.size() > kSlurmMaxNodeAddr) return false;
  for (char c : a)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
          c == '_' || c == ':'))
      return false;
  return true;
}

// "scontrol printed: '...'": the start of the output, for a node it did not describe.
std::string printed(const std::string& output) {
  std::string first = output.substr(0, output.find('\n'));
  if (first.size() > 160) first = first.substr(0, 160) + "...";
  return output.empty() ? "scontrol printed nothing" : "scontrol printed '" + shown_text(first) + "'";
}

// NodeName -> NodeAddr of every "NodeName=" line.
std::map<std::string, std::string> addrs_by_name(const std::string& output) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(at, end - at);
    at = end + 1;
    std::string name, addr;
    if (line.compare(0, 9, "NodeName=") != 0 || !word_value(line, "NodeName=", &name)) continue;
    if (!word_value(line, "NodeAddr=", &addr))
      throw SlurmNodeAddrError("scontrol shows node " + shown_text(name) + " without a NodeAddr");
    auto it = out.find(name);
    if (it != out.end() && it->second != addr)
      throw SlurmNodeAddrError("scontrol shows node " + shown_text(name) + " twice, with NodeAddr " +
                               shown_text(it->second) + " and " + shown_text(addr));
    out[name] = addr;
  }
  return out;
}

}  // namespace

std::vector<std::string> parse_scontrol_node_addrs(const std::string& output, const std::vector<std::string>& nodes) {
  const std::map<std::string, std::string> by_name = addrs_by_name(output);
  std::vector<std::string> addrs;
  for (const std::string& node : nodes) {
    auto it = by_name.find(node);
    if (it == by_name.end())
      throw SlurmNodeAddrError("scontrol does not show node " + shown_text(node) + " (" + printed(output) + ")");
    if (!valid_addr(it->second))
      throw SlurmNodeAddrError("scontrol shows node " + shown_text(node) + " with NodeAddr '" +
                               shown_text(it->second.substr(0, kSlurmMaxNodeAddr)) +
                               "', which is not an address or host name");
    addrs.push_back(it->second);
  }
  return addrs;
}
