// elastic_grow: growing a running elastic job (Horovod's semantics). While an attempt runs, the
// --host-discovery-script runs again once a second (or the -H hosts are looked at again, when a
// blacklisted one may come back after its --blacklist-cooldown-range cooldown); when the usable slots give a larger world
// (capped by --max-np) than the running one, the job waits for its next checkpoint in
// --checkpoint-dir, then is stopped (not a failure) and starts again with --resume on the larger
// world (launcher/job.cc). Without --checkpoint-dir the job does not grow (one line says so).
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/elastic_options.h"
#include "launcher/hosts.h"
#include "launcher/output.h"

class ElasticGrowth {
 public:
  // fixed: the -H hosts (no script); used: the running attempt's hosts and slots; rank0_here: dir
  // is readable on this host.
  ElasticGrowth(const ElasticOptions& e, const std::vector<HostSlots>& fixed, double timeout_s, ElasticHosts* hosts,
                const std::string& dir, bool rank0_here, const std::vector<HostSlots>& used, OutputSink* sink);
  // Asked every supervisor turn: true once the job should stop to grow (its line said).
  bool due();

 private:
  bool discovery_grows();
  std::string reported() const;  // "discovery reports hpc03:2, localhost:2": new hosts, hosts with more slots

  const ElasticOptions& e_;
  std::vector<HostSlots> fixed_;
  double timeout_s_;
  ElasticHosts* hosts_;
  std::string dir_;
  bool rank0_here_;
  std::vector<HostSlots> used_, discovered_;
  int np_ = 0, target_np_ = 0;
  OutputSink* sink_;
  bool said_no_checkpoints_ = false, said_error_ = false;
  std::string baseline_;                  // the newest checkpoint when growth was found
  std::chrono::milliseconds poll_{1000};  // rediscovery interval
  std::chrono::steady_clock::time_point next_poll_, next_look_;
};
