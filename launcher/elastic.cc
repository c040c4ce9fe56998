// elastic: running the host discovery (see elastic.h).
#include "launcher/elastic.h"

#include <chrono>
#include <stdexcept>

#include "launcher/host_discovery.h"
#include "launcher/process.h"
#include "src/shown_text.h"

namespace {

std::string first_line(const std::string& text) {
  const size_t a = text.find_first_not_of("\r\n");
  if (a == std::string::npos) return "";
  return text.substr(a, text.find_first_of("\r\n", a) - a);
}

}  // namespace

std::vector<HostSlots> discover_hosts(const ElasticOptions& e, const std::vector<HostSlots>& fixed, double timeout_s) {
  if (e.discovery_script.empty()) return fixed;
  std::string out, err;
  const auto timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  const int status = run_capture({"/bin/sh", "-c", e.discovery_script}, timeout, &out, &err);
  const std::string script = "--host-discovery-script " + shown_text(e.discovery_script);
  if (status == -1) throw std::runtime_error(script + ": " + shown_text(first_line(err)));
  if (status != 0) {
    const std::string why = first_line(err);
    throw std::runtime_error(script + " " + describe_wait_status(status) + (why.empty() ? "" : ": " + shown_text(why)));
  }
  try {
    return parse_discovery_output(out, e.discovery_script, e.slots_per_host);
  } catch (const HostError& bad) {
    throw std::runtime_error(bad.what());
  }
}
