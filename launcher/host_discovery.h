// host_discovery: Horovod's --host-discovery-script contract, pure. The script prints one host per
// line, "host" (it has --slots-per-host slots) or "host:slots"; blank lines are skipped (a script
// prints nothing while no host is ready). The launcher runs the script (launcher/elastic.cc) and
// hands its output here.
#pragma once
#include <string>
#include <vector>

#include "launcher/hosts.h"

// Hosts in the order the script printed them. Throws HostError with one line naming the script
// and the line ("--host-discovery-script S: line 3: ...") for a bad name, a bad slot count or a
// host listed twice.
std::vector<HostSlots> parse_discovery_output(const std::string& text, const std::string& script, int default_slots);
