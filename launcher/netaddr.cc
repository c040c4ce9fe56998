// netaddr: IPv4 resolution, address checks, route source address and interface addresses.
#include "launcher/netaddr.h"
#include "src/shown_text.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

bool is_ipv4_literal(const std::string& s) {
  struct in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool is_connectable_ipv4(const std::string& addr) {
  struct in_addr a;
  if (inet_pton(AF_INET, addr.c_str(), &a) != 1) return false;
  uint32_t h = ntohl(a.s_addr);
  return (h >> 24) != 0 && (h >> 28) < 14;  // not 0/8, not 224/4 (multicast) nor 240/4 (reserved)
}

namespace {}  // namespace

std::string bind_addr_problem(const std::string& addr) {
  if (!is_ipv4_literal(addr)) return "--bind-addr '" + shown_text(addr) + "' is not an IPv4 address";
  if (!is_connectable_ipv4(addr))
    return "--bind-addr " + addr +
           " is not an address ranks can connect to (the store and local ranks need one address of this machine, "
           "e.g. 127.0.0.1 or the interface address)";
  return "";
}

std::string resolve_ipv4(const std::string& host) {
  if (is_ipv4_literal(host)) return host;
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    throw std::runtime_error("cannot resolve '" + host + "' to an IPv4 address: " + gai_strerror(rc));
  char buf[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &reinterpret_cast<struct sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
  freeaddrinfo(res);
  return buf;
}

std::string route_source_ipv4(const std::string& peer) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  struct sockaddr_in sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons(9);  // any port: connect() on UDP sends nothing
  if (inet_pton(AF_INET, peer.c_str(), &sa.sin_addr) != 1) {
    close(fd);
    throw std::runtime_error("not an IPv4 address: '" + peer + "'");
  }
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof sa) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error("no route to " + peer + ": " + std::strerror(e));
  }
  struct sockaddr_in local;
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<struct sockaddr*>(&local), &len) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error(std::string("getsockname: ") + std::strerror(e));
  }
  close(fd);
  char buf[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf);
  return buf;
}

std::string interface_ipv4(const std::string& ifname) {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw std::runtime_error(std::string("getifaddrs: ") + std::strerror(errno));
  std::string found;
  bool exists = false;
  for (struct ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_name || ifname != i->ifa_name) continue;
    exists = true;
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<struct sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    found = buf;
    break;
  }
  freeifaddrs(list);
  if (found.empty())
    throw std::runtime_error("--network-interface " + ifname + ": " +
                             (exists ? "the interface has no IPv4 address" : "no such interface"));
  return found;
}
