// interface_choice: --network-interface or GLOO_SOCKET_IFNAME, and its address (see the header).
#include "comm/interface_choice.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "src/shown_text.h"

std::string InterfaceChoice::named() const {
  return source == "GLOO_SOCKET_IFNAME" ? "GLOO_SOCKET_IFNAME=" + shown_text(value) : source + " " + shown_text(value);
}

InterfaceChoice choose_interface(const std::string& flag, const char* gloo_socket_ifname) {
  if (!flag.empty()) return {flag, "--network-interface"};
  const std::string env = gloo_socket_ifname ? gloo_socket_ifname : "";
  if (env.empty()) return {};
  InterfaceChoice c{env, "GLOO_SOCKET_IFNAME"};
  if (env.find(',') != std::string::npos)
    throw std::invalid_argument(c.named() +
                                " lists several interfaces; baresgd binds one: name one (or pass --network-interface)");
  return c;
}

std::string interface_choice_ipv4(const InterfaceChoice& choice) {
  in_addr literal;
  if (::inet_pton(AF_INET, choice.value.c_str(), &literal) == 1) return choice.value;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw std::runtime_error(choice.named() + ": getifaddrs: " + std::strerror(errno));
  bool exists = false;
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_name == nullptr || choice.value != i->ifa_name) continue;
    exists = true;
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = "";
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    found = buf;
  }
  ::freeifaddrs(list);
  if (found.empty())
    throw std::runtime_error(choice.named() + ": " +
                             (exists ? "the interface has no IPv4 address" : "no such network interface on this host"));
  return found;
}
