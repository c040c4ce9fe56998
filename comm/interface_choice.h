// interface_choice: the network interface a user chose for a rank's sockets — --network-interface
// (a name or an IPv4 address), else GLOO_SOCKET_IFNAME (a name, as PyTorch's Gloo reads it) — and
// its IPv4 address. Gloo binds it (comm/backend_gloo.cc); under plain srun rank 0's MUNGE store
// binds it too (comm/slurm_store.h); ./launch binds its store to it (launcher/job_plan.cc).
#pragma once
#include <string>

struct InterfaceChoice {
  std::string value;   // "" when nothing was chosen
  std::string source;  // "--network-interface" or "GLOO_SOCKET_IFNAME"
  bool empty() const { return value.empty(); }
  // As one-line errors name it: "--network-interface lo", "GLOO_SOCKET_IFNAME=lo".
  std::string named() const;
};

// The choice: flag when non-empty, else gloo_socket_ifname (nullptr or "" = unset). Pure. Throws
// std::invalid_argument with one line for a GLOO_SOCKET_IFNAME that lists several interfaces
// ("eth0,eth1": PyTorch opens one device each; baresgd binds one).
InterfaceChoice choose_interface(const std::string& flag, const char* gloo_socket_ifname);

// The choice's IPv4 address: an IPv4 literal as it is, a name as its interface's first IPv4
// address (getifaddrs). Throws std::runtime_error with one line naming the choice: "no such
// network interface on this host" or "the interface has no IPv4 address".
std::string interface_choice_ipv4(const InterfaceChoice& choice);
