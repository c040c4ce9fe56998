// gloo_handover: how an authenticated socket of comm/pair_gate becomes a Gloo pair's socket, with
// Debian's Gloo unchanged. Gloo's tcp Pair makes its own connection: the active side calls
// ::connect() on a fresh socket, the passive side ::accept() once on the pair's listener. This file
// defines `connect` and `accept` for the whole process (the executable exports them, so libgloo's
// calls bind here) and lets comm/gloo_mesh arm them for exactly one pair at a time:
//   - active: ArmedConnect on the calling thread makes the next AF_INET/AF_INET6 connect() of
//     that thread take the authenticated socket (dup2 onto Gloo's fd) and return 0;
//   - passive: expect_doorbell() records "the listener at address L will be woken by a doorbell
//     connection from address D; hand it socket S instead". Gloo's device thread then calls
//     accept(L): connections from anyone but D are closed and reported as strangers, the doorbell
//     is closed, and S is returned.
// Every other call (unarmed threads, listeners nobody expects, unix sockets, MPI, MUNGE, our
// store) goes straight to the kernel.
#pragma once
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <string>

namespace gloo_handover {

// Active side, for one pair->connect(): the thread's next inet connect() gets `fd`.
class ArmedConnect {
 public:
  explicit ArmedConnect(int fd);
  ~ArmedConnect();  // closes the socket if no connect() took it
  bool taken() const;
};

// Passive side. Call begin_passive() before creating the pair (its listener exists from then on:
// an accept() on an inet listener nobody expects yet waits until every begun hand-over knows its
// listener), then expect_doorbell() with the pair's listener address, the doorbell's own address
// and the authenticated socket, then pair->connect(), then end_passive(), which returns whether
// the socket was handed over (if not, it is closed). Several threads (ranks run as threads in
// tests) may each have one hand-over under way. `stranger` is called, from Gloo's device thread,
// with the address of every stranger closed at that pair's listener.
using Handover = unsigned long;
Handover begin_passive(std::function<void(const std::string& from)> stranger);
void expect_doorbell(Handover h, const sockaddr_storage& listener, const sockaddr_storage& doorbell, int fd,
                     std::chrono::steady_clock::time_point deadline);
bool end_passive(Handover h);

}  // namespace gloo_handover
