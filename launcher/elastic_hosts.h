// elastic_hosts: which hosts an elastic job (--min-np, --max-np, --host-discovery-script) runs on
// next, pure: Horovod's host manager without its threads. Hosts keep the order they were first
// seen in (the oldest get the lowest ranks); a host whose ranks failed --blacklist-after times, or
// that stopped answering once, is blacklisted and left out until the job ends.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "launcher/hosts.h"

struct ElasticLimits {
  int min_np = 1;
  int max_np = 0;  // 0: as many as the usable slots
  int failures_to_blacklist = 2;
};

class ElasticHosts {
 public:
  explicit ElasticHosts(ElasticLimits limits) : limits_(limits) {}

  // A discovery result (or the fixed -H list): hosts and slots as they are now. True when the
  // usable slots changed since the last update (a host or slots came or went).
  bool update(const std::vector<HostSlots>& discovered);
  // A rank on host failed (non-zero exit, signal) with cause. Returns the one-line notice when
  // this failure blacklists the host, else "".
  std::string record_failure(const std::string& host, const std::string& cause);
  // host stopped answering (heartbeat timeout, ssh lost): blacklisted at once; the notice.
  std::string record_lost(const std::string& host, const std::string& cause);
  bool blacklisted(const std::string& host) const;

  // The hosts the next attempt uses, in assignment order, trimmed to next_np() ranks (slots =
  // ranks placed there); empty when fewer than min_np slots are usable.
  std::vector<HostSlots> next_hosts() const;
  // min(usable slots, max_np), or 0 when that is below min_np.
  int next_np() const;
  int usable_slots() const;
  // "2 usable slots (a:1, b:1; blacklisted: c), --min-np 3": for waiting and refusal messages.
  std::string describe() const;

 private:
  std::string blacklist(const std::string& host, const std::string& why);

  ElasticLimits limits_;
  std::vector<std::string> order_;    // every host ever seen, first-seen order
  std::map<std::string, int> slots_;  // the last discovery's hosts only
  std::map<std::string, int> failures_;
  std::map<std::string, std::string> blacklisted_;  // host -> why
};
