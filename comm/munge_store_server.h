// munge_store_server: the rendezvous store rank 0 serves to srun's tasks when nothing but Slurm is
// shared (no launcher, no secret). Clients are admitted by MUNGE, the cluster's own
// authentication: every connection starts with the mutual handshake below, then speaks the
// launcher store's requests (comm/store_protocol.h: 'S', 'G', 'A', 'P', one frame each).
//
// Handshake (frames as in store_protocol.h):
//   1. server -> client: "BSGD-STORE-MUNGE-1" + 64 hex characters of a fresh nonce (sn);
//   2. client -> server: 64 hex characters (cn) + a MUNGE credential whose payload is
//      munge_client_payload(step, sn, cn);
//   3. server -> client: "OK " + a MUNGE credential with munge_server_payload(step, cn), or
//      "DENIED " + the one-line reason (check_munge_credential) and the connection closes.
// Both sides decode the other's credential with munged and refuse another uid, another job
// step, another nonce, and munge's expired/replayed/rewound credentials.
//
// One accept thread plus one thread per connection (blocking sockets; a connection has
// auth_timeout to finish the handshake; at most kMaxConnections at once); stop() shuts every
// socket down and joins them all. Sockets are close-on-exec.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/store_session.h"

class MungeStoreServer {
 public:
  struct Config {
    std::string bind_addr;     // IPv4 literal of rank 0's node
    std::vector<int> ports;    // tried in order; the first free one is used
    std::string step_payload;  // munge_step_payload(job, step)
    std::string munge_socket;  // munged's socket ("" = libmunge's default)
    std::chrono::milliseconds auth_timeout{10000};
  };
  // Binds and starts serving. Throws std::runtime_error with one line naming the address and
  // the ports when none of them can be bound.
  explicit MungeStoreServer(const Config& config);
  ~MungeStoreServer();
  MungeStoreServer(const MungeStoreServer&) = delete;
  MungeStoreServer& operator=(const MungeStoreServer&) = delete;
  int port() const { return port_; }
  void stop();  // idempotent

 private:
  struct Worker {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void accept_loop();
  void serve(int fd, const std::string& peer, Worker* self);
  void reap_finished_workers();  // with mu_ held
  bool admit(int fd, const std::string& peer);
  std::string handle(const std::string& request, bool* malformed);
  void forget(int fd);

  Config config_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> refused_{0};
  std::thread acceptor_;
  std::mutex mu_;                                 // guards everything below
  std::vector<std::unique_ptr<Worker>> workers_;  // finished ones are joined at the next accept
  std::vector<int> open_fds_;
  StoreTable table_{uint64_t(256) << 20};  // the launcher store's table and limit
};
