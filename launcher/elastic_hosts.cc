// elastic_hosts: the elastic job's host choice (see elastic_hosts.h).
#include "launcher/elastic_hosts.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

CooldownSource system_cooldown_source() {
  auto gen = std::make_shared<std::mt19937_64>(std::random_device{}());
  return {[] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); },
          [gen] { return std::uniform_real_distribution<double>(0.0, 1.0)(*gen); }};
}

// Horovod's resurrection: a listed host whose cooldown is over is usable again, failures forgotten.
void ElasticHosts::readmit(const std::vector<HostSlots>& discovered, std::vector<std::string>* back) {
  const double now = source_.now_s();
  for (const HostSlots& h : discovered) {
    auto c = cooldowns_.find(h.name);
    if (c == cooldowns_.end() || c->second.until == 0 || now < c->second.until) continue;
    c->second.until = 0;
    blacklisted_.erase(h.name);
    failures_.erase(h.name);
    if (back)
      back->push_back("launch: host " + h.name + " is usable again after its " +
                      cooldown_seconds_text(c->second.seconds) + " s blacklist cooldown");
  }
}

bool ElasticHosts::update(const std::vector<HostSlots>& discovered, std::vector<std::string>* back) {
  const int before = usable_slots();
  std::vector<HostSlots> old_hosts = next_hosts();
  readmit(discovered, back);
  slots_.clear();
  for (const HostSlots& h : discovered) {
    slots_[h.name] = h.slots;
    if (std::find(order_.begin(), order_.end(), h.name) == order_.end()) order_.push_back(h.name);
  }
  if (usable_slots() != before) return true;
  std::vector<HostSlots> now = next_hosts();
  if (now.size() != old_hosts.size()) return true;
  for (size_t k = 0; k < now.size(); ++k)
    if (now[k].name != old_hosts[k].name || now[k].slots != old_hosts[k].slots) return true;
  return false;
}

std::string ElasticHosts::blacklist(const std::string& host, const std::string& why) {
  if (blacklisted(host)) return "";
  blacklisted_[host] = why;
  const std::string head = "launch: host " + host + " blacklisted (" + why + "); it gets no ranks ";
  if (!cooldown_.given()) return head + "for the rest of the job";
  Cooldown& c = cooldowns_[host];
  c.seconds = cooldown_seconds(cooldown_, ++c.blacklistings, source_.uniform());
  c.until = source_.now_s() + c.seconds;
  return head + "for " + cooldown_seconds_text(c.seconds) + " s (blacklisting " + std::to_string(c.blacklistings) +
         ", " + cooldown_flag_text(cooldown_) + ")";
}

bool ElasticHosts::cooling() const {
  for (const auto& [host, c] : cooldowns_)
    if (c.until > 0) return true;
  return false;
}

std::string ElasticHosts::record_failure(const std::string& host, const std::string& cause) {
  const int n = ++failures_[host];
  if (n < limits_.failures_to_blacklist) return "";
  return blacklist(host, "its ranks failed " + std::to_string(n) + " times, last: " + cause);
}

std::string ElasticHosts::record_lost(const std::string& host, const std::string& cause) {
  ++failures_[host];
  return blacklist(host, cause);
}

bool ElasticHosts::blacklisted(const std::string& host) const { return blacklisted_.count(host) != 0; }

int ElasticHosts::usable_slots() const {
  int total = 0;
  for (const auto& [name, slots] : slots_)
    if (!blacklisted(name)) total += slots;
  return total;
}

int ElasticHosts::next_np() const {
  int np = usable_slots();
  if (limits_.max_np > 0) np = std::min(np, limits_.max_np);
  return np >= std::max(1, limits_.min_np) ? np : 0;
}

std::vector<HostSlots> ElasticHosts::next_hosts() const {
  std::vector<HostSlots> out;
  int left = next_np();
  for (const std::string& name : order_) {
    auto it = slots_.find(name);
    if (left == 0 || it == slots_.end() || blacklisted(name)) continue;
    const int take = std::min(left, it->second);
    out.push_back({name, take});
    left -= take;
  }
  return out;
}

std::string ElasticHosts::describe() const {
  std::string usable, black;
  for (const std::string& name : order_) {
    if (blacklisted(name))
      black += (black.empty() ? "" : ", ") + name;
    else if (slots_.count(name))
      usable += (usable.empty() ? "" : ", ") + name + ":" + std::to_string(slots_.at(name));
  }
  std::string s = std::to_string(usable_slots()) + " usable slots (" + (usable.empty() ? "none" : usable);
  if (!black.empty()) s += "; blacklisted: " + black;
  return s + "), --min-np " + std::to_string(std::max(1, limits_.min_np));
}
