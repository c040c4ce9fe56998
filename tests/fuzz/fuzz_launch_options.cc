// fuzz_launch_options: libFuzzer target for ./launch's flag parser (launcher/options.h
// parse_launch_options).
//
// Input: the bytes split on NUL into argv[1..]. BARESGD_SSH_CONFIG is cleared so the parse is a
// function of the input alone.
// Contract checked: parse_launch_options returns or throws UsageError (with a message) — no
// other exception — and an accepted command line (without --help, or a version flag, which must
// be among the words) is complete and consistent:
//   -np >= 1 when given (else 0: host_choice.h decides), exactly one transport, a non-empty CMD
//   that is the tail of argv, -H and --hostfile not both, --network-interface and --bind-addr not both, an ssh port in 1..65535 written in
//   canonical decimal, --start-timeout in (0, 1e8], --timeout 0 (none) or in (0, 1e8], and the
//   start timeout convertible to milliseconds as launcher/job.cc does (long(seconds * 1000)).
//   Heartbeats: --heartbeat-timeout in [0.5, 1e5], --heartbeat-interval (given, or the default
//   min(5, timeout/6)) in [0.05, timeout); converted to milliseconds as launcher/job_plan.cc does
//   they make a spawn request the agent accepts (decode_agent_request) with the same values.
//   --bind-addr: bind_addr_problem (launcher/netaddr.h) refuses exactly what is not a dotted quad
//   of four decimal octets, or is 0.0.0.0/8 (the wildcard), multicast or reserved (>= 224), and
//   its message is one line naming --bind-addr.
//   Restarts: --max-restarts / --reset-limit in [0, 1e6] (0 when neither is given); the restarted
//   command (launcher/restart.h resume_command) is CMD, or CMD plus one trailing --resume when CMD
//   has a --checkpoint-dir value and no --resume, and applying it again changes nothing; the
//   --dry-run policy line is empty exactly for 0 and else one line.
//   --blacklist-cooldown-range: given only in elastic mode, 1 <= MIN <= MAX <= 3600, and every
//   cooldown it gives (launcher/blacklist_cooldown.h) lies in [MIN, MAX].
//
// Build: make fuzz (build-fuzz/fuzz_launch_options); run: .ci/fuzz.sh
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/agent_protocol.h"
#include "launcher/blacklist_cooldown.h"
#include "launcher/netaddr.h"
#include "launcher/options.h"
#include "launcher/restart.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// An independent reading of inet_pton(AF_INET): four decimal octets 0..255, no leading zeros
// ("01" is refused by glibc), nothing else. Sets *first to the first octet.
bool dotted_quad(const std::string& s, int* first) {
  int parts = 0;
  size_t pos = 0;
  while (true) {
    size_t end = pos;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    const size_t n = end - pos;
    if (n == 0 || n > 3 || (n > 1 && s[pos] == '0')) return false;
    const int v = std::atoi(s.substr(pos, n).c_str());
    if (v > 255) return false;
    if (parts == 0) *first = v;
    ++parts;
    if (end == s.size()) return parts == 4;
    if (s[end] != '.' || parts == 4) return false;
    pos = end + 1;
  }
}

void check_bind_addr(const std::string& addr) {
  const std::string why = bind_addr_problem(addr);
  int first = -1;
  const bool ok = dotted_quad(addr, &first) && first != 0 && first < 224;
  FUZZ_CHECK(why.empty() == ok);
  if (ok) return;
  FUZZ_CHECK(why.compare(0, 12, "--bind-addr ") == 0);
  FUZZ_CHECK(why.find_first_of("\n\r") == std::string::npos);
}

// launcher/job_plan.cc plan_remote_rank's conversion, and the agent's check of it.
void check_heartbeats(const LaunchOptions& o) {
  FUZZ_CHECK(std::isfinite(o.heartbeat_timeout) && o.heartbeat_timeout >= 0.5 && o.heartbeat_timeout <= 1e5);
  FUZZ_CHECK(std::isfinite(o.heartbeat_interval) && o.heartbeat_interval >= 0.05 &&
             o.heartbeat_interval < o.heartbeat_timeout);
  AgentRequest req;
  req.nonce = "n";
  req.argv = {"prog"};
  req.heartbeat_timeout_ms = std::lround(o.heartbeat_timeout * 1000);
  req.heartbeat_interval_ms =
      std::min(req.heartbeat_timeout_ms - 1, std::max(1L, std::lround(o.heartbeat_interval * 1000)));
  const std::string enc = encode_agent_request(req);
  AgentRequest got;
  FUZZ_CHECK(decode_agent_request(enc.substr(std::strlen(kAgentMagic) + 4), &got));
  FUZZ_CHECK(got.heartbeat_timeout_ms == req.heartbeat_timeout_ms);
  FUZZ_CHECK(got.heartbeat_interval_ms == req.heartbeat_interval_ms);
}

void check_restarts(const LaunchOptions& o) {
  FUZZ_CHECK(o.max_restarts >= 0 && o.max_restarts <= 1000000);
  const std::vector<std::string> again = resume_command(o.command);
  FUZZ_CHECK(resume_command(again) == again);
  const bool had_resume = std::find(o.command.begin() + 1, o.command.end(), "--resume") != o.command.end();
  const bool adds = !checkpoint_dir_of(o.command).empty() && !had_resume;
  FUZZ_CHECK(again.size() == o.command.size() + (adds ? 1 : 0));
  FUZZ_CHECK(std::equal(o.command.begin(), o.command.end(), again.begin()));
  if (adds) FUZZ_CHECK(again.back() == "--resume");
  const std::string policy = restart_policy_line(o.max_restarts, o.command);
  FUZZ_CHECK(policy.empty() == (o.max_restarts == 0));
  if (!policy.empty()) FUZZ_CHECK(policy.find('\n') == policy.size() - 1);
}

void check_cooldown(const LaunchOptions& o) {
  const CooldownRange& r = o.elastic.cooldown;
  if (!r.given()) {
    FUZZ_CHECK(r.max_s == 0);
    return;
  }
  FUZZ_CHECK(o.elastic.enabled());
  FUZZ_CHECK(r.min_s >= 1 && r.min_s <= r.max_s && r.max_s <= 3600);
  for (int n : {0, 1, 2, 12, 31, 1000000})
    for (double u : {0.0, 0.5, 0.999999}) {
      const double s = cooldown_seconds(r, n, u);
      FUZZ_CHECK(s >= r.min_s && s <= r.max_s);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::unsetenv("BARESGD_SSH_CONFIG");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = fuzz_split_nul(std::string(reinterpret_cast<const char*>(data), size));
  LaunchOptions o;
  try {
    o = parse_launch_options(args);
  } catch (const UsageError& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0);
    return 0;
  }
  if (o.help) return 0;
  if (o.version) {  // -v/--version/-cb/--check-build (horovodrun's): print the version, nothing else
    bool named = false;
    for (const std::string& a : args)
      named = named || a == "-v" || a == "--version" || a == "-cb" || a == "--check-build";
    FUZZ_CHECK(named);
    return 0;
  }
  FUZZ_CHECK(o.np_given ? o.np >= 1 : o.np == 0);  // no -np: the Slurm allocation sets it (host_choice.h)
  FUZZ_CHECK(o.transport == Transport::kGloo || o.transport == Transport::kMpi);
  FUZZ_CHECK(!o.command.empty() && !o.command[0].empty());
  FUZZ_CHECK(o.command.size() <= args.size());
  for (size_t k = 0; k < o.command.size(); ++k) FUZZ_CHECK(o.command[k] == args[args.size() - o.command.size() + k]);
  FUZZ_CHECK(o.hosts.empty() || o.hostfile.empty());
  FUZZ_CHECK(o.network_interface.empty() || o.bind_addr.empty());
  if (!o.bind_addr.empty()) check_bind_addr(o.bind_addr);
  check_heartbeats(o);
  check_restarts(o);
  check_cooldown(o);
  if (!o.ssh_port.empty()) {
    const long p = std::strtol(o.ssh_port.c_str(), nullptr, 10);
    FUZZ_CHECK(p >= 1 && p <= 65535);
    FUZZ_CHECK(std::to_string(p) == o.ssh_port);
  }
  FUZZ_CHECK(std::isfinite(o.start_timeout) && o.start_timeout > 0 && o.start_timeout <= 1e8);
  FUZZ_CHECK(o.timeout == 0 || (std::isfinite(o.timeout) && o.timeout > 0 && o.timeout <= 1e8));
  FUZZ_CHECK(o.start_timeout * 1000 < 9.2e18);
  return 0;
}
