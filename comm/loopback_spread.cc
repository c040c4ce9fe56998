// loopback_spread: the loopback address each rank on a host binds (see loopback_spread.h).
#include "comm/loopback_spread.h"

#include <arpa/inet.h>

#include <stdexcept>

namespace {

// The address as a host-order number; false when ip is not a dotted IPv4 address.
bool parse_ipv4(const std::string& ip, uint32_t* out) {
  in_addr a{};
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1) return false;
  *out = ntohl(a.s_addr);
  return true;
}

std::string ipv4_text(uint32_t host_order) {
  in_addr a{};
  a.s_addr = htonl(host_order);
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

}  // namespace

bool is_ipv4_loopback(const std::string& ip) {
  uint32_t a = 0;
  return parse_ipv4(ip, &a) && (a >> 24) == 127;
}

std::string loopback_address_for_local_rank(const std::string& base, int local_rank) {
  uint32_t a = 0;
  if (!parse_ipv4(base, &a) || (a >> 24) != 127 || local_rank <= 0) return base;
  const uint64_t spread = uint64_t(a) + (uint64_t(local_rank) << 8);
  if ((spread >> 24) != 127)
    throw std::invalid_argument("local rank " + std::to_string(local_rank) + "'s loopback address (" + base +
                                " + 256 x " + std::to_string(local_rank) + ") leaves 127.0.0.0/8");
  return ipv4_text(uint32_t(spread));
}

std::string no_free_port_hint(const std::string& error, const std::string& ip, const std::string& port_range,
                              bool shared) {
  if (error.find("Address already in use") == std::string::npos &&
      error.find("Cannot assign requested address") == std::string::npos)
    return "";
  std::string range = port_range;
  for (char& c : range)
    if (c == '\t' || c == '\n') c = ' ';
  while (!range.empty() && range.back() == ' ') range.pop_back();
  std::string hint = " (no free port on " + ip + ": the ephemeral ports, net.ipv4.ip_local_port_range " +
                     (range.empty() ? "unknown" : range) + ", are all held";
  if (shared && is_ipv4_loopback(ip))
    hint += "; every rank on this host shares " + ip + ": --network-interface lo gives each its own loopback address";
  return hint + ")";
}
