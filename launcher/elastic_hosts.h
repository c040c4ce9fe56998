// elastic_hosts: which hosts an elastic job (--min-np, --max-np, --host-discovery-script) runs on
// next, pure: Horovod's host manager without its threads. Hosts keep the order they were first
// seen in (the oldest get the lowest ranks); a host whose ranks failed --blacklist-after times, or
// that stopped answering once, is blacklisted and left out until the job ends, or with
// --blacklist-cooldown-range until its cooldown is over (launcher/blacklist_cooldown.h): then the
// next update that lists it lets it back, with its failures forgotten.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launcher/blacklist_cooldown.h"
#include "launcher/hosts.h"

struct ElasticLimits {
  int min_np = 1;
  int max_np = 0;  // 0: as many as the usable slots
  int failures_to_blacklist = 2;
};

// Where the cooldowns take their time and randomness; tests give a fake clock and fixed draws.
struct CooldownSource {
  std::function<double()> now_s;    // seconds on a monotonic clock
  std::function<double()> uniform;  // uniform in [0, 1)
};
CooldownSource system_cooldown_source();  // the steady clock; a random_device-seeded generator

class ElasticHosts {
 public:
  // cooldown not given: a blacklist lasts until the job ends.
  explicit ElasticHosts(ElasticLimits limits, CooldownRange cooldown = {},
                        CooldownSource source = system_cooldown_source())
      : limits_(limits), cooldown_(cooldown), source_(std::move(source)) {}

  // A discovery result (or the fixed -H list): hosts and slots as they are now. A listed host
  // whose cooldown is over is usable again (one line each into *back, when given). True when the
  // usable slots changed since the last update (a host or slots came or went).
  bool update(const std::vector<HostSlots>& discovered, std::vector<std::string>* back = nullptr);
  // A rank on host failed (non-zero exit, signal) with cause. Returns the one-line notice when
  // this failure blacklists the host, else "".
  std::string record_failure(const std::string& host, const std::string& cause);
  // host stopped answering (heartbeat timeout, ssh lost): blacklisted at once; the notice.
  std::string record_lost(const std::string& host, const std::string& cause);
  bool blacklisted(const std::string& host) const;
  // Some blacklisted host will be usable again (its cooldown runs): worth waiting for.
  bool cooling() const;

  // The hosts the next attempt uses, in assignment order, trimmed to next_np() ranks (slots =
  // ranks placed there); empty when fewer than min_np slots are usable.
  std::vector<HostSlots> next_hosts() const;
  // min(usable slots, max_np), or 0 when that is below min_np.
  int next_np() const;
  int usable_slots() const;
  // "2 usable slots (a:1, b:1; blacklisted: c), --min-np 3": for waiting and refusal messages.
  std::string describe() const;

 private:
  struct Cooldown {
    int blacklistings = 0;
    double seconds = 0, until = 0;  // until 0: not cooling
  };
  std::string blacklist(const std::string& host, const std::string& why);
  void readmit(const std::vector<HostSlots>& discovered, std::vector<std::string>* back);

  ElasticLimits limits_;
  CooldownRange cooldown_;
  CooldownSource source_;
  std::map<std::string, Cooldown> cooldowns_;
  std::vector<std::string> order_;    // every host ever seen, first-seen order
  std::map<std::string, int> slots_;  // the last discovery's hosts only
  std::map<std::string, int> failures_;
  std::map<std::string, std::string> blacklisted_;  // host -> why
};
