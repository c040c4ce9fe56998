// proc_listeners: the TCP sockets a process listens on, as the kernel shows them to anyone: its
// socket inodes (/proc/PID/fd) matched against the LISTEN lines of /proc/PID/net/tcp and tcp6.
// Tests only (the Gloo gate's stranger, Open MPI's listeners).
#pragma once
#include <arpa/inet.h>
#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace proclisteners {

struct TcpListener {
  bool v6 = false;
  std::string ip;  // "127.0.1.1", "::1", "0.0.0.0"
  unsigned port = 0;
  bool wildcard() const { return ip == "0.0.0.0" || ip == "::"; }
  bool loopback() const { return v6 ? ip == "::1" : ip.rfind("127.", 0) == 0; }
  std::string address() const { return v6 ? "[" + ip + "]:" + std::to_string(port) : ip + ":" + std::to_string(port); }
  std::string shown() const { return std::string(v6 ? "tcp6 " : "tcp ") + address(); }
};

// The inodes of pid's sockets ("socket:[INODE]" links in /proc/PID/fd).
inline std::set<std::string> socket_inodes(pid_t pid) {
  std::set<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char buf[128];
    const ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    const std::string target(buf, size_t(n));
    if (target.rfind("socket:[", 0) == 0) out.insert(target.substr(8, target.size() - 9));
  }
  ::closedir(d);
  return out;
}

// /proc/net/tcp's address column: the address's 32-bit words, each printed as a host-order
// number ("0100007F" is 127.0.0.1 on x86).
inline std::string proc_net_ip(const std::string& hex, bool v6) {
  unsigned char bytes[16] = {};
  const size_t words = v6 ? 4 : 1;
  if (hex.size() != 8 * words) return "";
  for (size_t i = 0; i < words; ++i) {
    const uint32_t w = uint32_t(std::strtoul(hex.substr(8 * i, 8).c_str(), nullptr, 16));
    std::memcpy(bytes + 4 * i, &w, 4);
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes, text, sizeof text);
  return text;
}

// pid's listening TCP sockets, IPv4 and IPv6.
inline std::vector<TcpListener> tcp_listeners_of(pid_t pid) {
  std::vector<TcpListener> out;
  const std::set<std::string> inodes = socket_inodes(pid);
  for (bool v6 : {false, true}) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/net/tcp" + (v6 ? "6" : ""));
    std::string line;
    std::getline(file, line);  // header
    while (std::getline(file, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      const size_t colon = local.find(':');
      if (state != "0A" || !inodes.count(inode) || colon == std::string::npos) continue;
      TcpListener l;
      l.v6 = v6;
      l.ip = proc_net_ip(local.substr(0, colon), v6);
      l.port = unsigned(std::strtoul(local.c_str() + colon + 1, nullptr, 16));
      out.push_back(l);
    }
  }
  return out;
}

}  // namespace proclisteners
