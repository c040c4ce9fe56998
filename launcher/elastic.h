// elastic: the impure half of an elastic job — running the --host-discovery-script (or taking the
// fixed -H hosts) and turning the result into the next attempt's hosts. job.cc runs the attempts;
// the choice itself is launcher/elastic_hosts.h.
#pragma once
#include <string>
#include <vector>

#include "launcher/elastic_options.h"
#include "launcher/hosts.h"

// The hosts usable now: the script's output (run by /bin/sh -c, killed after timeout_s), or fixed
// when there is no script. Throws std::runtime_error with one line naming the script for a
// script that cannot run, times out, exits non-zero (with its first stderr line) or prints a bad
// line.
std::vector<HostSlots> discover_hosts(const ElasticOptions& e, const std::vector<HostSlots>& fixed, double timeout_s);
