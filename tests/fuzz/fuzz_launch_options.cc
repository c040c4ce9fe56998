// fuzz_launch_options: libFuzzer target for ./launch's flag parser (launcher/options.h
// parse_launch_options).
//
// Input: the bytes split on NUL into argv[1..]. BARESGD_SSH_CONFIG is cleared so the parse is a
// function of the input alone.
// Contract checked: parse_launch_options returns or throws UsageError (with a message) — no
// other exception — and an accepted command line (without --help) is complete and consistent:
//   -np >= 1 when given (else 0: host_choice.h decides), exactly one transport, a non-empty CMD
//   that is the tail of argv, -H and --hostfile not both, --network-interface and --bind-addr not both, an ssh port in 1..65535 written in
//   canonical decimal, --start-timeout in (0, 1e8], --timeout 0 (none) or in (0, 1e8], and the
//   start timeout convertible to milliseconds as launcher/job.cc does (long(seconds * 1000)).
//
// Build: make fuzz (build-fuzz/fuzz_launch_options); run: .ci/fuzz.sh
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "launcher/options.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::unsetenv("BARESGD_SSH_CONFIG");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args =
      fuzz_split_nul(std::string(reinterpret_cast<const char*>(data), size));
  LaunchOptions o;
  try {
    o = parse_launch_options(args);
  } catch (const UsageError& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0);
    return 0;
  }
  if (o.help) return 0;
  FUZZ_CHECK(o.np_given ? o.np >= 1 : o.np == 0);  // no -np: the Slurm allocation sets it (host_choice.h)
  FUZZ_CHECK(o.transport == Transport::kGloo || o.transport == Transport::kMpi);
  FUZZ_CHECK(!o.command.empty() && !o.command[0].empty());
  FUZZ_CHECK(o.command.size() <= args.size());
  for (size_t k = 0; k < o.command.size(); ++k)
    FUZZ_CHECK(o.command[k] == args[args.size() - o.command.size() + k]);
  FUZZ_CHECK(o.hosts.empty() || o.hostfile.empty());
  FUZZ_CHECK(o.network_interface.empty() || o.bind_addr.empty());
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
