// host_discovery: parsing a --host-discovery-script's output (see host_discovery.h).
#include "launcher/host_discovery.h"

#include <set>

#include "src/shown_text.h"

namespace {

std::string trimmed(const std::string& s) {
  const char* space = " \t\r\v\f";
  const size_t a = s.find_first_not_of(space);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(space) - a + 1);
}

// One non-blank line as "name:slots" through -H's own checks, so a discovered host obeys the
// rules of a listed one.
HostSlots parse_line(const std::string& line, int default_slots) {
  const std::string spec = line.find(':') == std::string::npos ? line + ":" + std::to_string(default_slots) : line;
  if (spec.find(',') != std::string::npos) throw HostError("one host per line, not a list");
  std::vector<HostSlots> one = parse_host_list(spec);
  return one.at(0);
}

// parse_host_list's messages start "-H '<spec>': "; the line number says which line already.
std::string reason_of(const std::string& message) {
  const size_t at = message.find("': ");
  return message.compare(0, 4, "-H '") == 0 && at != std::string::npos ? message.substr(at + 3) : message;
}

}  // namespace

std::vector<HostSlots> parse_discovery_output(const std::string& text, const std::string& script, int default_slots) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  size_t pos = 0;
  for (int number = 1; pos < text.size(); ++number) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = trimmed(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty()) continue;
    const std::string where = "--host-discovery-script " + shown_text(script) + ": line " + std::to_string(number);
    HostSlots h;
    try {
      h = parse_line(line, default_slots);
    } catch (const HostError& e) {
      throw HostError(where + ": " + shown_text(line) + ": " + shown_text(reason_of(e.what())));
    }
    if (!seen.insert(h.name).second) throw HostError(where + ": host " + shown_text(h.name) + " is printed twice");
    hosts.push_back(h);
  }
  return hosts;
}
