// fuzz_slurm_hostlist: libFuzzer target for Slurm's compressed lists and the allocation read
// from them (comm/slurm_hostlist.h: expand_slurm_hostlist, expand_slurm_tasks_per_node;
// launcher/slurm_allocation.h: read_slurm_allocation).
//
// Input: byte 0 picks what is fuzzed (0: a host list, 1: a tasks-per-node list, else the whole
// allocation); the rest split on NUL is SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE and, if present,
// SLURM_NTASKS.
// Contract checked: the parsers return or throw SlurmListError, nothing else, with a one-line
// message naming the variable; an accepted host list has 1..65536 names of 1..255 characters from
// [A-Za-z0-9._-], none starting with '-', and joined with ',' expands to itself; an accepted
// tasks list has 1..65536 counts in 1..65536 and, compressed again as Slurm writes it
// ("2(x3),1"), expands to itself; an accepted allocation pairs every host with its count, has
// no host twice, 1 <= ntasks <= slots <= 65536, and its hosts are a valid -H list for ./launch
// (launcher/hosts.h parse_host_list of name:slots,... gives the same hosts).
//
// Build: make fuzz (build-fuzz/fuzz_slurm_hostlist); run: .ci/fuzz.sh
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "launcher/hosts.h"
#include "launcher/slurm_allocation.h"
#include "comm/slurm_hostlist.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

void check_message(const SlurmListError& e, const std::string& variable) {
  const std::string m = e.what();
  FUZZ_CHECK(m.find('\n') == std::string::npos && m.find('\r') == std::string::npos);
  FUZZ_CHECK(m.find(variable) != std::string::npos);
}

bool name_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' || c == '.';
}

void check_hosts(const std::vector<std::string>& hosts) {
  FUZZ_CHECK(!hosts.empty() && hosts.size() <= kSlurmMaxHosts);
  std::string joined;
  for (const std::string& h : hosts) {
    FUZZ_CHECK(!h.empty() && h.size() <= kSlurmMaxHostName && h[0] != '-');
    for (char c : h) FUZZ_CHECK(name_char(c));
    joined += (joined.empty() ? "" : ",") + h;
  }
  FUZZ_CHECK(expand_slurm_hostlist(joined) == hosts);
}

void check_tasks(const std::vector<int>& tasks) {
  FUZZ_CHECK(!tasks.empty() && tasks.size() <= kSlurmMaxHosts);
  std::string compressed;
  for (size_t k = 0; k < tasks.size();) {
    FUZZ_CHECK(tasks[k] >= 1 && tasks[k] <= kSlurmMaxTasksPerNode);
    size_t run = 1;
    while (k + run < tasks.size() && tasks[k + run] == tasks[k]) ++run;
    compressed +=
        (compressed.empty() ? "" : ",") + std::to_string(tasks[k]) + (run > 1 ? "(x" + std::to_string(run) + ")" : "");
    k += run;
  }
  FUZZ_CHECK(expand_slurm_tasks_per_node(compressed) == tasks);
}

void fuzz_allocation(const std::vector<std::string>& words) {
  EnvMap env = {{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", words.size() > 0 ? words[0] : ""}};
  if (words.size() > 1) env["SLURM_TASKS_PER_NODE"] = words[1];
  if (words.size() > 2) env["SLURM_NTASKS"] = words[2];
  SlurmAllocation a;
  try {
    a = read_slurm_allocation(env);
  } catch (const SlurmListError& e) {
    check_message(e, "SLURM_");
    return;
  }
  FUZZ_CHECK(!a.hosts.empty() && a.ntasks >= 1 && a.ntasks <= a.slots && a.slots <= 65536);
  std::set<std::string> names;
  std::string as_flag;
  long slots = 0;
  for (const HostSlots& h : a.hosts) {
    FUZZ_CHECK(names.insert(h.name).second);
    slots += h.slots;
    as_flag += (as_flag.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  }
  FUZZ_CHECK(slots == a.slots);
  const std::vector<HostSlots> again = parse_host_list(as_flag);  // throws (a crash) if refused
  FUZZ_CHECK(again.size() == a.hosts.size());
  for (size_t k = 0; k < again.size(); ++k)
    FUZZ_CHECK(again[k].name == a.hosts[k].name && again[k].slots == a.hosts[k].slots);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const uint8_t mode = in.u8() % 3;
  const std::string text = in.rest();
  if (mode == 0) {
    std::vector<std::string> hosts;
    try {
      hosts = expand_slurm_hostlist(text);
    } catch (const SlurmListError& e) {
      check_message(e, "SLURM_JOB_NODELIST='");
      return 0;
    }
    check_hosts(hosts);  // outside the try: a refused re-expansion is a crash
  } else if (mode == 1) {
    std::vector<int> tasks;
    try {
      tasks = expand_slurm_tasks_per_node(text);
    } catch (const SlurmListError& e) {
      check_message(e, "SLURM_TASKS_PER_NODE='");
      return 0;
    }
    check_tasks(tasks);
  } else {
    fuzz_allocation(fuzz_split_nul(text));
  }
  return 0;
}
