// elastic_options: ./launch's elastic flags, Horovod's names and meanings — --min-np, --max-np,
// --host-discovery-script, --slots-per-host, --elastic-timeout, --blacklist-cooldown-range. Given --min-np or a discovery
// script, a failed job restarts on the hosts still usable (launcher/elastic_hosts.h) with
// --resume, at any world size from --min-np to --max-np.
#pragma once
#include <functional>
#include <string>

#include "launcher/blacklist_cooldown.h"

struct ElasticOptions {
  int min_np = 0;                // 0: not given
  int max_np = 0;                // 0: no upper bound
  std::string discovery_script;  // run through /bin/sh -c, prints host[:slots] lines
  int slots_per_host = 1;        // for discovered hosts printed without ":slots"
  bool slots_given = false;
  double elastic_timeout_s = 600;  // how long to wait for --min-np slots (HOROVOD_ELASTIC_TIMEOUT)
  CooldownRange cooldown;          // --blacklist-cooldown-range MIN MAX: blacklisted hosts come back
  bool enabled() const { return min_np > 0 || !discovery_script.empty(); }
};

// When name is an elastic flag: reads its value through value() (which consumes the next word
// or the inline =value), stores it and returns true; false for any other flag. Throws UsageError
// (launcher/options.h) with one line naming the flag for a bad value.
bool parse_elastic_flag(const std::string& name, const std::function<std::string()>& value, ElasticOptions* o);

// After the whole command line: the checks across flags (min <= -np <= max, a discovery script
// and -H/--hostfile are exclusive, elastic runs on --gloo only, --slots-per-host needs a
// script, --blacklist-cooldown-range needs elastic mode) and HOROVOD_ELASTIC_TIMEOUT when --elastic-timeout was not given. Throws UsageError.
struct LaunchOptions;
void check_elastic_options(const LaunchOptions& o, ElasticOptions* e, bool timeout_given, const char* env_timeout);
