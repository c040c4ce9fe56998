// ssh_check: ./launch's reachability check before a job starts — `ssh ... host true` to every
// remote host in parallel, a few attempts each with backoff, all within --start-timeout.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "launcher/ssh.h"

// Returns one entry per host: empty if reachable, else ssh's reason (its last stderr line, or
// "no answer within N s (--start-timeout)"). Reasons that another attempt cannot change
// (authentication, host keys, unknown names) end a host's attempts at once.
// cancelled() is polled; when it returns true the checks stop and every result not yet known reads
// "cancelled".
std::vector<std::string> check_ssh_hosts(const SshOptions& o, const std::vector<std::string>& hosts,
                                         std::chrono::steady_clock::time_point deadline,
                                         const std::function<bool()>& cancelled = nullptr);
