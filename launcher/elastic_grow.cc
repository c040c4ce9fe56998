// elastic_grow: rediscovery while an elastic job runs, and when it grows (see elastic_grow.h).
#include "launcher/elastic_grow.h"

#include <cstdlib>
#include <stdexcept>

#include "launcher/elastic.h"
#include "launcher/restart.h"
#include "src/parse_int.h"
#include "src/shown_text.h"

using Clock = std::chrono::steady_clock;

namespace {

// How often a running elastic job rediscovers its hosts: once a second, as Horovod's driver does;
// BARESGD_ELASTIC_POLL_MS (10..60000) changes it (the growth tests poll faster than they train).
std::chrono::milliseconds rediscovery_interval() {
  const char* v = std::getenv("BARESGD_ELASTIC_POLL_MS");
  if (v == nullptr) return std::chrono::milliseconds(1000);
  int ms = 0;
  if (!parse_decimal_int(v, IntSign::kNone, 10, 60000, &ms))
    throw std::runtime_error("BARESGD_ELASTIC_POLL_MS '" + shown_text(v) + "' is not 10..60000 milliseconds");
  return std::chrono::milliseconds(ms);
}

}  // namespace

ElasticGrowth::ElasticGrowth(const ElasticOptions& e, const std::vector<HostSlots>& fixed, double timeout_s,
                             ElasticHosts* hosts, const std::string& dir, bool rank0_here,
                             const std::vector<HostSlots>& used, OutputSink* sink)
    : e_(e),
      fixed_(fixed),
      timeout_s_(timeout_s),
      hosts_(hosts),
      dir_(dir),
      rank0_here_(rank0_here),
      used_(used),
      sink_(sink) {
  for (const HostSlots& h : used) np_ += h.slots;
  poll_ = rediscovery_interval();
  next_poll_ = Clock::now() + poll_;
}

std::string ElasticGrowth::reported() const {
  std::string out = e_.discovery_script.empty() ? "the -H hosts give " : "discovery reports ";
  const size_t head = out.size();
  for (const HostSlots& d : discovered_) {
    int had = 0;
    for (const HostSlots& u : used_)
      if (u.name == d.name) had = u.slots;
    if (d.slots > had) out += (out.size() == head ? "" : ", ") + d.name + ":" + std::to_string(d.slots);
  }
  return out;
}

// One rediscovery: true when it gives more ranks than run now. A failing script is said once.
bool ElasticGrowth::discovery_grows() {
  try {
    discovered_ = discover_hosts(e_, fixed_, timeout_s_);
  } catch (const std::exception& bad) {
    if (!said_error_) sink_->message(std::string("launch: ") + bad.what() + " (the job keeps running)");
    said_error_ = true;
    return false;
  }
  std::vector<std::string> back;
  hosts_->update(discovered_, &back);
  for (const std::string& line : back) sink_->message(line);
  const int np = hosts_->next_np();
  if (np <= np_) return false;
  if (dir_.empty()) {
    if (!said_no_checkpoints_)
      sink_->message("launch: elastic growth: " + reported() +
                     "; the job does not grow without --checkpoint-dir (a restart would lose its work), it keeps "
                     "running on " +
                     std::to_string(np_) + (np_ == 1 ? " rank" : " ranks"));
    said_no_checkpoints_ = true;
    return false;
  }
  target_np_ = np;
  return true;
}

bool ElasticGrowth::due() {
  const auto now = Clock::now();
  std::string name;
  long long step = 0;
  if (target_np_ == 0) {
    if (now < next_poll_) return false;
    next_poll_ = now + poll_;
    if (!discovery_grows()) return false;
    if (newest_checkpoint(dir_, &name, &step) > 0) baseline_ = name;
  }
  const std::string to = " to restart on " + std::to_string(target_np_) + " ranks (was " + std::to_string(np_) + ")";
  if (!rank0_here_) {  // the checkpoints are written on another host: stop now
    sink_->message("launch: elastic growth: " + reported() + "; stopping now" + to +
                   ", resuming from the newest checkpoint in " + shown_text(dir_));
    return true;
  }
  if (now < next_look_) return false;
  next_look_ = now + std::chrono::milliseconds(100);
  if (newest_checkpoint(dir_, &name, &step) <= 0 || name == baseline_) return false;
  sink_->message("launch: elastic growth: " + reported() + "; stopping after checkpoint step " + std::to_string(step) +
                 to);
  return true;
}
