// gloo_mesh: Gloo pairs over authenticated sockets (see gloo_mesh.h).
//
// Gloo's tcp Pair decides who connects by comparing the two listening addresses it is given:
// memcmp of the IP addresses, then the ports; the side whose own address is greater connects
// (Pair::connect). We give each pair a made-up peer address that makes Gloo do what phase A already
// did: 0.0.0.0:0 (or [::]:0) is below every address a device can have, so this side connects;
// 255.255.255.255:65535 (or [ffff:...]:65535) is above every one, so this side accepts.
//   - connect: ArmedConnect makes Gloo's ::connect() take the authenticated socket (dup2).
//   - accept: Gloo's listener is woken by a "doorbell" connection we make to it ourselves before
//     pair->connect(); Gloo's accept() closes it (and any stranger before it) and returns the
//     authenticated socket instead.
// One pair at a time, so a rank has at most one Gloo pair listener at any moment (Gloo opens one
// per pair in its constructor; the active side closes it at once).
#include "comm/gloo_mesh.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "comm/gloo_handover.h"
#include "comm/pair_gate.h"
#include "comm/socket_io.h"

namespace {

// A gloo::rendezvous::Context whose transport context we build ourselves.
class HandedContext : public gloo::rendezvous::Context {
 public:
  HandedContext(int rank, int size) : gloo::rendezvous::Context(rank, size) {}
  void adopt(std::shared_ptr<gloo::transport::Device> device, std::shared_ptr<gloo::transport::Context> transport) {
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

// The made-up peer address: lowest (this side connects) or highest (this side accepts) there is.
std::vector<char> fake_peer(int family, bool this_side_connects) {
  sockaddr_storage ss{};
  ss.ss_family = static_cast<sa_family_t>(family);
  const unsigned char fill = this_side_connects ? 0x00 : 0xff;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    std::memset(&a->sin_addr, fill, sizeof a->sin_addr);
    a->sin_port = this_side_connects ? 0 : 0xffff;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    std::memset(&a->sin6_addr, fill, sizeof a->sin6_addr);
    a->sin6_port = this_side_connects ? 0 : 0xffff;
  }
  return gloo::transport::tcp::Address(ss).bytes();
}

// A connection to the pair's own listener, so that Gloo's device thread wakes and calls accept().
// Returns the doorbell's socket (its address in *from); the kernel completes it without Gloo.
int ring_doorbell(const sockaddr_storage& listener, sockaddr_storage* from) {
  const int fd = ::socket(listener.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("doorbell socket: ") + std::strerror(errno));
  if (!socket_io::bind_source_address(fd, listener)) {  // from this rank's own address, as its pairs
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string("doorbell bind: ") + std::strerror(err));
  }
  const socklen_t len = listener.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&listener), len) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string("doorbell connect: ") + std::strerror(err));
  }
  socklen_t from_len = sizeof *from;
  getsockname(fd, reinterpret_cast<sockaddr*>(from), &from_len);
  return fd;
}

}  // namespace

std::shared_ptr<gloo::rendezvous::Context> connect_gloo_mesh(std::shared_ptr<gloo::transport::Device> device,
                                                             PairGate* gate, int mesh, int rank, int size,
                                                             int local_rank, std::chrono::milliseconds timeout) {
  auto context = std::make_shared<HandedContext>(rank, size);
  context->setTimeout(timeout);
  auto transport = device->createContext(rank, size);
  transport->setTimeout(timeout);  // each pair's I/O timeout (the sync lane's reads and writes)
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const int fd = gate->take(mesh, peer);
    const bool this_side_connects = rank > peer;  // phase A's client
    if (this_side_connects) {
      auto& pair = transport->createPair(peer);
      pair->setLocalRank(local_rank);
      const int family = gloo::transport::tcp::Address(pair->address().bytes()).getSockaddr().ss_family;
      gloo_handover::ArmedConnect armed(fd);
      pair->connect(fake_peer(family, true));
      if (!armed.taken()) throw std::runtime_error("Gloo did not connect its pair to rank " + std::to_string(peer));
      continue;
    }
    const gloo_handover::Handover h =
        gloo_handover::begin_passive([gate](const std::string& from) { gate->count_stranger(from); });
    int doorbell = -1;
    bool expected = false;
    try {
      auto& pair = transport->createPair(peer);
      pair->setLocalRank(local_rank);
      const sockaddr_storage listener = gloo::transport::tcp::Address(pair->address().bytes()).getSockaddr();
      sockaddr_storage from{};
      doorbell = ring_doorbell(listener, &from);
      gloo_handover::expect_doorbell(h, listener, from, fd, std::chrono::steady_clock::now() + timeout);
      expected = true;
      pair->connect(fake_peer(listener.ss_family, false));
    } catch (...) {
      if (doorbell >= 0) ::close(doorbell);
      if (!expected) ::close(fd);
      gloo_handover::end_passive(h);
      throw;
    }
    ::close(doorbell);
    if (!gloo_handover::end_passive(h))
      throw std::runtime_error("Gloo did not accept its pair from rank " + std::to_string(peer));
  }
  context->adopt(device, std::move(transport));
  return context;
}
