// hosts: parsing -H and hostfiles, and laying ranks out over the hosts' slots (see hosts.h).
#include "launcher/hosts.h"
#include "src/safe_file.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "src/parse_int.h"

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// Strict positive decimal that fits in an int.
bool parse_slots(const std::string& s, int* out) {
  return s.size() <= 9 && parse_decimal_int(s, IntSign::kNone, 1, 65536, out);  // no host has more slots
}

// Empty string if the name is acceptable, else the reason.
std::string bad_name_reason(const std::string& name) {
  if (name.empty()) return "empty host name";
  if (name[0] == '-') return "host name '" + name + "' starts with '-'";
  for (char c : name) {
    if (is_space(c)) return "host name '" + name + "' contains whitespace";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "host name contains a control character";
    if (c == ',' || c == ':' || c == '\'' || c == '"' || c == '\\' || c == '`' || c == '$' || c == ';' || c == '|' ||
        c == '&' || c == '<' || c == '>' || c == '(' || c == ')' || c == '*' || c == '?')
      return "host name '" + name + "' contains '" + std::string(1, c) + "'";
  }
  return "";
}

void check_duplicates(const std::vector<HostSlots>& hosts, const std::string& where) {
  std::set<std::string> seen;
  for (const HostSlots& h : hosts) {
    if (!seen.insert(h.name).second)
      throw HostError(where + ": host '" + h.name + "' is listed twice (list it once with " + h.name + ":K slots)");
  }
}

}  // namespace

std::vector<HostSlots> parse_host_list(const std::string& spec) {
  if (spec.empty()) throw HostError("-H: empty host list");
  std::vector<HostSlots> out;
  size_t pos = 0;
  while (true) {
    size_t comma = spec.find(',', pos);
    std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) throw HostError("-H '" + spec + "': empty host entry");
    HostSlots h;
    size_t colon = item.find(':');
    if (colon == std::string::npos) {
      h.name = item;
      h.slots = 1;
    } else {
      h.name = item.substr(0, colon);
      std::string slots = item.substr(colon + 1);
      if (h.name.empty()) throw HostError("-H '" + spec + "': empty host name in '" + item + "'");
      if (!parse_slots(slots, &h.slots))
        throw HostError("-H '" + spec + "': bad slot count '" + slots + "' for host '" + h.name +
                        "' (need a whole number >= 1)");
    }
    std::string why = bad_name_reason(h.name);
    if (!why.empty()) throw HostError("-H '" + spec + "': " + why);
    out.push_back(h);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  check_duplicates(out, "-H '" + spec + "'");
  return out;
}

std::vector<HostSlots> parse_hostfile_text(const std::string& text, const std::string& filename) {
  std::vector<HostSlots> out;
  std::map<std::string, int> first_line;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::string where = filename + ":" + std::to_string(lineno);
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::vector<std::string> tok;
    std::string cur;
    for (char c : line) {
      if (is_space(c)) {
        if (!cur.empty()) tok.push_back(cur), cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) tok.push_back(cur);
    if (tok.empty()) continue;
    HostSlots h;
    h.name = tok[0];
    std::string why = bad_name_reason(h.name);
    if (!why.empty()) throw HostError(where + ": " + why + " (expected 'host slots=K')");
    if (tok.size() > 2) throw HostError(where + ": unexpected '" + tok[2] + "' (expected 'host slots=K')");
    if (tok.size() == 2) {
      const std::string& kv = tok[1];
      if (kv.compare(0, 6, "slots=") != 0 && kv.compare(0, 10, "max_slots=") != 0)
        throw HostError(where + ": unexpected '" + kv + "' (expected 'host slots=K')");
      if (kv.compare(0, 6, "slots=") != 0) throw HostError(where + ": only slots=K is supported, not '" + kv + "'");
      if (!parse_slots(kv.substr(6), &h.slots))
        throw HostError(where + ": bad slot count '" + kv.substr(6) + "' (need a whole number >= 1)");
    }
    auto it = first_line.find(h.name);
    if (it != first_line.end())
      throw HostError(where + ": host '" + h.name + "' is listed twice (first at line " + std::to_string(it->second) +
                      ")");
    first_line[h.name] = lineno;
    out.push_back(h);
  }
  if (out.empty()) throw HostError(filename + ": no hosts in hostfile");
  return out;
}

// A hostfile of a million bytes lists some 50,000 hosts: more is not a hostfile.
constexpr size_t kMaxHostfileBytes = 1 << 20;

std::vector<HostSlots> read_hostfile(const std::string& path) {
  // A regular file of at most 1 MiB (a FIFO or /dev/zero is named, never read: src/safe_file.h).
  try {
    return parse_hostfile_text(read_regular_file(path, kMaxHostfileBytes, "--hostfile"), path);
  } catch (const SafeFileError& e) {
    throw HostError(e.what());
  }
}

std::vector<RankPlacement> layout_ranks(const std::vector<HostSlots>& hosts, int np) {
  if (np <= 0) throw HostError("-np must be >= 1 (got " + std::to_string(np) + ")");
  long total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  if (np > total) {
    std::string list;
    for (const HostSlots& h : hosts) list += (list.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
    throw HostError("-np " + std::to_string(np) + " is more than the " + std::to_string(total) + " slots in " +
                    (list.empty() ? std::string("the host list") : list));
  }
  std::vector<RankPlacement> out;
  std::vector<int> per_host;  // ranks placed on each used host
  int rank = 0;
  for (const HostSlots& h : hosts) {
    if (rank == np) break;
    int here = std::min<long>(h.slots, np - rank);
    int host_index = static_cast<int>(per_host.size());
    per_host.push_back(here);
    for (int s = 0; s < here; ++s, ++rank) {
      RankPlacement p;
      p.rank = rank;
      p.size = np;
      p.local_rank = s;
      p.host_index = host_index;
      p.host = h.name;
      out.push_back(p);
    }
  }
  for (RankPlacement& p : out) {
    p.local_size = per_host[p.host_index];
    p.cross_rank = 0;
    p.cross_size = 0;
    for (size_t k = 0; k < per_host.size(); ++k) {
      if (per_host[k] > p.local_rank) {
        if (static_cast<int>(k) < p.host_index) ++p.cross_rank;
        ++p.cross_size;
      }
    }
  }
  return out;
}

std::vector<HostSlots> used_hosts(const std::vector<RankPlacement>& layout) {
  std::vector<HostSlots> out;
  for (const RankPlacement& p : layout) {
    if (static_cast<int>(out.size()) <= p.host_index) out.push_back({p.host, 0});
    out[p.host_index].slots++;
  }
  return out;
}

bool is_local_host_name(const std::string& name, const std::string& my_hostname) {
  if (name == "localhost" || name == "127.0.0.1" || name == "localhost.localdomain") return true;
  if (my_hostname.empty()) return false;
  if (name == my_hostname) return true;
  std::string short_me = my_hostname.substr(0, my_hostname.find('.'));
  return name == short_me;
}

std::string this_hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}
