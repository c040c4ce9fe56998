// socket_io: blocking-free TCP client I/O with deadlines, shared by the rendezvous store clients
// (comm/store_client, comm/munge_store_client, comm/c10d_store_client). Sockets are non-blocking and every wait is a
// poll() bounded by a deadline, so no call can hang past it.
#pragma once
#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace socket_io {

using Clock = std::chrono::steady_clock;

enum class Io { kOk, kTimeout, kClosed, kError };

struct IoResult {
  Io status;
  int err;  // errno for kError
};

// Milliseconds left until deadline, rounded up, >= 0, capped to fit poll()'s int.
int ms_left(Clock::time_point deadline);

// The pause between the attempts of a poll (connect until a store answers, get until a key is
// set): `first`, doubling up to `cap`, never sleeping past the deadline.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap) : next_(first), cap_(cap) {}
  // Sleeps the next pause and returns true; false, without sleeping, once the deadline has passed.
  bool wait(Clock::time_point deadline);

 private:
  std::chrono::milliseconds next_, cap_;
};
// Waits for events on fd; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline);
IoResult send_all(int fd, const char* p, size_t n, Clock::time_point deadline);
// Appends exactly n bytes to out (growing it as data arrives, never by n up front).
IoResult recv_exact(int fd, std::string* out, size_t n, Clock::time_point deadline);
// Reads one frame of the store's framing (a 4-byte big-endian length, then the body) into *body;
// kError with err = EMSGSIZE if its length prefix exceeds max_len.
IoResult recv_frame(int fd, std::string* body, uint32_t max_len, Clock::time_point deadline);
std::string io_text(IoResult r);
// Opens a connected, non-blocking, TCP_NODELAY socket to one address; -1 and *why on failure.
int connect_once(const addrinfo* ai, Clock::time_point deadline, std::string* why);

// Binds fd, a socket about to connect, to the IP address of `own` (its port ignored) without
// taking a port yet (IP_BIND_ADDRESS_NO_PORT): connect() then picks the port, and may share one
// among connections to different peers. The connection leaves from this rank's own address
// (comm/loopback_spread.h), so its port is counted there. False with errno set on failure.
bool bind_source_address(int fd, const sockaddr_storage& own);

using AddrList = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;
// Resolves "host:port" ("[v6]:port" too) for a TCP connect. Throws std::runtime_error
// "<what>: address is not host:port" or "<what>: cannot resolve host: ...".
AddrList resolve_host_port(const std::string& addr, const std::string& what);

}  // namespace socket_io
