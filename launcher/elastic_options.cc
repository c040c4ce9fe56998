// elastic_options: parsing and checking ./launch's elastic flags (see elastic_options.h).
#include "launcher/elastic_options.h"

#include "launcher/options.h"
#include "src/shown_text.h"

namespace {

int parse_count(const std::string& flag, const std::string& v) {
  int n = 0;
  try {
    n = parse_int_flag(flag, v);
  } catch (const UsageError& e) {
    throw UsageError(e.what(), false);
  }
  if (n < 1 || n > 65536) throw UsageError(flag + " must be 1..65536 (got " + shown_text(v) + ")", false);
  return n;
}

}  // namespace

bool parse_elastic_flag(const std::string& name, const std::function<std::string()>& value, ElasticOptions* o) {
  if (name == "--min-np" || name == "--min-num-proc") {
    o->min_np = parse_count(name, value());
  } else if (name == "--max-np" || name == "--max-num-proc") {
    o->max_np = parse_count(name, value());
  } else if (name == "--host-discovery-script") {
    o->discovery_script = value();
    if (o->discovery_script.empty()) throw UsageError("--host-discovery-script: empty command", false);
  } else if (name == "--slots-per-host") {
    o->slots_per_host = parse_count(name, value());
    o->slots_given = true;
  } else if (name == "--elastic-timeout") {
    o->elastic_timeout_s = parse_seconds_flag(name, value());
  } else {
    return false;
  }
  return true;
}

void check_elastic_options(const LaunchOptions& o, ElasticOptions* e, bool timeout_given, const char* env_timeout) {
  if (!timeout_given && env_timeout && *env_timeout) {
    try {
      e->elastic_timeout_s = parse_seconds_flag("HOROVOD_ELASTIC_TIMEOUT", env_timeout);
    } catch (const UsageError& bad) {
      throw UsageError(bad.what(), false);
    }
  }
  if (e->slots_given && e->discovery_script.empty())
    throw UsageError("--slots-per-host is for hosts a --host-discovery-script prints; with -H give host:slots", false);
  if (!e->enabled()) {
    if (e->max_np > 0) throw UsageError("--max-np needs --min-np or --host-discovery-script (elastic mode)", false);
    if (e->cooldown.given())
      throw UsageError("--blacklist-cooldown-range needs --min-np or --host-discovery-script (elastic mode)", false);
    return;
  }
  const std::string mode = e->discovery_script.empty() ? "--min-np" : "--host-discovery-script";
  if (o.transport == Transport::kMpi)
    throw UsageError(mode +
                         " needs --gloo: elastic jobs restart their ranks with a new world size, which mpirun's "
                         "fixed MPI world cannot",
                     false);
  if (!e->discovery_script.empty() && (!o.hosts.empty() || !o.hostfile.empty()))
    throw UsageError(std::string("--host-discovery-script and ") + (o.hosts.empty() ? "--hostfile" : "-H") +
                         " both say where ranks go: pick one",
                     false);
  if (e->max_np > 0 && e->min_np > e->max_np)
    throw UsageError("--min-np " + std::to_string(e->min_np) + " is more than --max-np " + std::to_string(e->max_np),
                     false);
  if (o.np_given && e->min_np > o.np)
    throw UsageError("--min-np " + std::to_string(e->min_np) + " is more than -np " + std::to_string(o.np), false);
  if (o.np_given && e->max_np > 0 && o.np > e->max_np)
    throw UsageError("-np " + std::to_string(o.np) + " is more than --max-np " + std::to_string(e->max_np), false);
}
