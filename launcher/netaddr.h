// netaddr: IPv4 address helpers for ./launch — resolving a host name, the local address that
// routes to a peer (connected UDP socket, no packet sent) and an interface's address. Whether an
// address is loopback: comm/loopback_spread.h, is_ipv4_loopback (the trainer's test too).
#pragma once
#include <string>

// A numeric IPv4 address stays as it is; a name is resolved with getaddrinfo (AF_INET).
// Throws std::runtime_error naming the host.
std::string resolve_ipv4(const std::string& host);
bool is_ipv4_literal(const std::string& s);
// False for addresses no peer can connect to: 0.0.0.0/8 (INADDR_ANY), 255.255.255.255, multicast
// 224.0.0.0/4 and reserved 240.0.0.0/4.
bool is_connectable_ipv4(const std::string& addr);
// Why addr cannot be --bind-addr, as one line naming the flag and the value (control bytes shown
// as \xNN), or "" when it can: it must be an IPv4 literal that peers can connect to (not 0.0.0.0,
// which binds every interface, nor broadcast, multicast or reserved). Pure.
std::string bind_addr_problem(const std::string& addr);
// The local source address the kernel would use to reach peer (UDP connect + getsockname).
std::string route_source_ipv4(const std::string& peer);
// The first IPv4 address of interface ifname. Throws if it has none.
std::string interface_ipv4(const std::string& ifname);
