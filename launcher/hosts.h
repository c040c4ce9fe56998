// hosts: ./launch's host list (-H host:slots,... or a hostfile) and the rank layout over it.
// Pure functions; errors are thrown as HostError with a one-line message.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

struct HostError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HostSlots {
  std::string name;  // as given (a name from ssh config, a DNS name or an IPv4 address)
  int slots = 1;
};

// Where one rank runs and who it is, horovodrun's definitions:
//   local_rank  = slot index on its host, local_size = ranks on that host;
//   cross_rank  = index of the host among the hosts that have this local_rank,
//   cross_size  = number of such hosts.
struct RankPlacement {
  int rank = 0, size = 0;
  int local_rank = 0, local_size = 0;
  int cross_rank = 0, cross_size = 0;
  int host_index = 0;  // index into the host list that was laid out (hosts with no rank dropped)
  std::string host;
};

// "-H a:2,b,c:4" -> {a,2},{b,1},{c,4}. Rejects empty names, slots <= 0 or not a number, duplicate
// hosts, names that start with '-' or contain whitespace (they would reach ssh's command line).
std::vector<HostSlots> parse_host_list(const std::string& spec);

// Hostfile text: one "host" or "host slots=K" per line; '#' starts a comment; blank lines skipped.
// Errors name "<filename>:<line>".
std::vector<HostSlots> parse_hostfile_text(const std::string& text, const std::string& filename);
// Reads and parses a hostfile; an unreadable file is an error naming it.
std::vector<HostSlots> read_hostfile(const std::string& path);

// Fills the hosts' slots in order with np ranks. Throws when np <= 0 or np > total slots. Hosts
// that get no rank are not in the result (so host_index counts only hosts that run ranks).
std::vector<RankPlacement> layout_ranks(const std::vector<HostSlots>& hosts, int np);
// The hosts that received at least one rank, in order, with slots = ranks placed there.
std::vector<HostSlots> used_hosts(const std::vector<RankPlacement>& layout);

// True for names that mean this machine without ssh: "localhost", "127.0.0.1" and this machine's
// host name (short or as gethostname returns it).
bool is_local_host_name(const std::string& name, const std::string& my_hostname);
// gethostname(), or "localhost" if that fails.
std::string this_hostname();
