// pair_gate: the authenticated TCP mesh a Gloo job builds before Gloo sees any socket (phase A of
// comm/backend_gloo's connect; comm/gloo_mesh hands the sockets to Gloo in phase B).
//
// Each rank opens ONE listening socket, its "gate", and publishes its address once. For every pair
// of ranks (i < j) and every mesh m, rank j connects to rank i's gate (as in Gloo's own mesh, the
// lower rank accepts and the higher one dials), and the two prove the job
// secret to each other before a byte of Gloo's protocol moves (all integers big-endian u32):
//   gate   -> client: Ns                                        16 random bytes
//   client -> gate  : from, mesh, Nc, HMAC(secret, "baresgd-gate-client" Ns mesh from to)  56 bytes
//   gate   -> client: HMAC(secret, "baresgd-gate-server" Nc mesh from to)                   32 bytes
// Every message has a fixed length and both sides read exactly that much, so when the handshake
// ends the stream is clean for Gloo. A connection to the gate that sends anything else, names a
// pair it cannot be (from <= to or past the world, a mesh that does not exist, a pair already connected) or stays
// silent past kGateConnectionDeadline is closed and counted as a stranger; it never stops the job.
// A client whose connection is refused or dropped retries (the gate may drop a real rank that was
// descheduled too long); a gate that answers with a wrong proof is an error.
//
// Everything runs in one poll() loop over non-blocking sockets with one deadline for the whole
// mesh: when it passes, the error names every peer whose connection never completed.
// A rank's connections to other gates leave from its gate's address (bound without a port,
// comm/socket_io.h bind_source_address), so on one host each rank's ports are its own
// (comm/loopback_spread.h).
// Costs: one listening socket per rank, one key of ~25 bytes per rank, M * W(W-1)/2 connections of
// 104 handshake bytes, 4 HMACs per connection.
#pragma once
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

constexpr size_t kGateNonceBytes = 16;
constexpr size_t kGateHelloBytes = 4 + 4 + kGateNonceBytes + 32;
constexpr size_t kGateProofBytes = 32;
constexpr std::chrono::milliseconds kGateConnectionDeadline{5000};

// The proof the client sends for (mesh, from -> to) over the gate's nonce, and the gate's answer.
std::string gate_client_proof(const std::string& secret, const std::string& gate_nonce, int mesh, int from, int to);
std::string gate_server_proof(const std::string& secret, const std::string& client_nonce, int mesh, int from, int to);
// The client's 56-byte hello.
std::string gate_client_hello(const std::string& secret, const std::string& gate_nonce, const std::string& client_nonce,
                              int mesh, int from, int to);

// What a gate makes of a complete 56-byte hello: the pair it proves, or why it is refused.
struct GateVerdict {
  bool ok = false;
  int mesh = -1, from = -1;
  std::string why;  // when !ok: "wrong proof", "a pair that cannot connect here", ...
};
GateVerdict check_gate_hello(const std::string& secret, const std::string& gate_nonce, const std::string& hello,
                             int meshes, int to, int size);

class PairGate {
 public:
  using Clock = std::chrono::steady_clock;
  // Opens the gate on `ip` (the address the Gloo device is bound to), port 0. Throws on failure.
  PairGate(const std::string& ip, int rank, int size, int meshes);
  ~PairGate();
  PairGate(const PairGate&) = delete;
  PairGate& operator=(const PairGate&) = delete;

  // "ip:port" or "[v6]:port": what this rank publishes.
  const std::string& address() const { return address_; }

  // Connects every pair of every mesh, proving `secret`: to every lower rank's gate (gates[r] is
  // rank r's address, only r < rank are read), and accepts every higher rank at this one. Returns when all are done;
  // throws std::runtime_error naming the missing peers at the deadline (`budget` is what the
  // message calls the whole start-up's limit). Closes the gate either way.
  void connect_all(const std::string& secret, const std::vector<std::string>& gates, Clock::time_point deadline,
                   const std::string& budget);

  // The authenticated socket of (mesh, peer); the caller owns it from here on.
  int take(int mesh, int peer);

  // Connections to this gate that were closed without proving the secret, and a one-line summary
  // ("dropped 2 connections ... (from 127.0.0.1:40122, ...)"), empty when there were none.
  int dropped() const { return dropped_; }
  std::string dropped_summary() const;
  // Counts a stranger found elsewhere (comm/gloo_handover's accept) into the same summary.
  void count_stranger(const std::string& from);

 private:
  struct Conn;
  std::string missing_error(const std::string& budget) const;

  int rank_, size_, meshes_;
  std::string secret_;
  int listen_fd_ = -1;
  sockaddr_storage own_{};  // the gate's address: this rank's connections to other gates leave from its IP
  std::string address_;
  std::vector<std::string> gates_;
  std::vector<std::vector<int>> sockets_;  // [mesh][peer], -1 until done
  int dropped_ = 0;
  std::vector<std::string> dropped_from_;  // the first few addresses
};
