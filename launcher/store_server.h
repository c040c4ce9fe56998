// store_server: the rendezvous key-value store ./launch serves to Gloo ranks (one poll() thread,
// non-blocking sockets, authentication per connection; see comm/store_protocol.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>

class StoreServer {
 public:
  // Listens on bind_addr (an IPv4 address; never 0.0.0.0 unless asked) at port (0 = ephemeral).
  // Throws std::runtime_error naming the address on failure.
  StoreServer(const std::string& bind_addr, int port, const std::string& secret);
  ~StoreServer();  // stops the thread and closes every socket
  int port() const { return port_; }
  void start();    // serve in a background thread
  void stop();
  // Counters for tests and --verbose.
  uint64_t denied_count() const { return denied_.load(); }
  uint64_t dropped_count() const { return dropped_.load(); }

 private:
  void serve();
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::string secret_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> denied_{0}, dropped_{0};
  std::map<std::string, std::string> kv_;
};
