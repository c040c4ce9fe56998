// store_server: the rendezvous key-value store ./launch serves to Gloo ranks (one poll() thread,
// non-blocking sockets, authentication per connection; see comm/store_protocol.h).
//
// Robustness: every socket is non-blocking and each connection has its own input and output
// buffers (comm/store_session.h), so a slow, silent or half-open client only ever holds its
// own slot. Unauthenticated connections are closed after limits.auth_timeout; when
// limits.max_connections are open, a new connection evicts the oldest unauthenticated one (or is
// closed itself if every slot is authenticated). Malformed input closes that connection only.
// All sockets are close-on-exec, so ranks spawned by ./launch do not inherit them.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <poll.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/store_session.h"

class StoreServer {
 public:
  // Listens on bind_addr (an IPv4 address; never 0.0.0.0 unless asked) at port (0 = ephemeral).
  // Throws std::runtime_error naming the address on failure (also for an empty address or an
  // empty secret).
  StoreServer(const std::string& bind_addr, int port, const std::string& secret,
              const StoreLimits& limits = StoreLimits());
  ~StoreServer();  // stops the thread and closes every socket
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const { return port_; }
  void start();  // serve in a background thread
  void stop();   // idempotent; the server cannot be restarted afterwards
  // Counters for tests and --verbose.
  uint64_t denied_count() const { return denied_.load(); }
  uint64_t dropped_count() const { return dropped_.load(); }

 private:
  struct Connection;
  void serve();
  void serve_once();
  int poll_timeout_ms() const;
  std::vector<pollfd> poll_set() const;
  void serve_ready(Connection* c, short revents);
  void close_finished();
  void accept_new();
  void admit(int fd);
  void read_from(Connection* c);
  void write_to(Connection* c);
  void close_connection(size_t index);
  void close_all_fds();

  std::string bind_addr_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int spare_fd_ = -1;  // released to accept-and-close when out of file descriptors
  int port_ = 0;
  std::string secret_;
  StoreLimits limits_;
  std::thread thread_;
  std::mutex lifecycle_mu_;
  bool stopped_ = false;
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> denied_{0}, dropped_{0};
  // Owned by the serve thread.
  StoreTable table_;
  std::vector<std::unique_ptr<Connection>> conns_;
};
