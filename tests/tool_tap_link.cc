// tool_tap_link: the network link between the two namespace test hosts of tests/netns_hosts.sh. It
// makes a tap device named --tap inside each of the two network namespaces and moves every frame
// one tap sends to the other, through tests/link_model.h's link (--delay-ms each way,
// --bandwidth, a --queue-bytes switch buffer). One process, in the root namespace, that touches no
// network: a frame exists only in the two taps and this process.
//
// The taps carry virtio-net headers with checksum and TCP segmentation offload (IFF_VNET_HDR,
// TUNSETOFFLOAD), as a virtual machine's NIC does: a host's kernel hands over TCP segments of up to
// 64 KB, and the frames are moved whole, at a few system calls per 64 KB instead of per MTU frame.
// The link's bandwidth still counts every byte. A frame written to a tap that is down (netns_hosts.sh
// link HOST down) is lost, as on a cut cable.
//
//   tool_tap_link --netns-a /run/netns/A --netns-b /run/netns/B --tap bsgd0 --pidfile DIR/link.pid
//                 [--delay-ms MS] [--bandwidth BYTES_PER_S[K|M|G]] [--queue-bytes N]
//
// It writes its pid file once both taps exist, runs until SIGTERM or SIGINT, and then prints one
// line per direction (frames, bytes, drops) to stderr. Errors: one line, exit 1 (2 for usage).
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

#include "tests/link_model.h"

namespace {

using link_model::LinkDirection;

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "tool_tap_link: %s\n", what.c_str());
  std::exit(1);
}

int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Enters the network namespace of file (a /run/netns entry or /proc/PID/ns/net).
void enter_netns(const std::string& file) {
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("cannot open network namespace " + file + ": " + std::strerror(errno));
  if (setns(fd, CLONE_NEWNET) != 0) die("cannot enter network namespace " + file + ": " + std::strerror(errno));
  close(fd);
}

// A non-blocking tap named name in the current network namespace, with virtio-net headers and
// checksum + TSO offload.
int open_tap(const std::string& name, const std::string& netns) {
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) die(std::string("cannot open /dev/net/tun: ") + std::strerror(errno));
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("cannot make tap " + name + " in " + netns + ": " + std::strerror(errno));
  if (ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) != 0)
    die("cannot set the offloads of tap " + name + " in " + netns + ": " + std::strerror(errno));
  return fd;
}

struct Frame {
  int64_t leaves_ns;
  std::vector<char> bytes;
};

// One direction: frames read from `in`, on the link, written to `out` when they leave it.
struct Direction {
  std::string name;  // "nsA -> nsB"
  int in, out;
  LinkDirection link;
  std::deque<Frame> on_link;
  uint64_t frames = 0, bytes = 0, dropped_full = 0, lost_down = 0;

  void deliver(const char* data, size_t n) {
    if (write(out, data, n) == ssize_t(n)) {
      ++frames;
      bytes += n;
    } else {
      ++lost_down;  // the receiving tap is down (EIO) or its queue is full: lost, like a cut cable's
    }
  }
  // Frames that have left the link by now, delivered; the time the next one leaves, or -1.
  int64_t deliver_due(int64_t now) {
    while (!on_link.empty() && on_link.front().leaves_ns <= now) {
      deliver(on_link.front().bytes.data(), on_link.front().bytes.size());
      on_link.pop_front();
    }
    return on_link.empty() ? -1 : on_link.front().leaves_ns;
  }
  // Every frame waiting in `in`, onto the link (or through at once when it adds no time).
  void take_arrivals(std::vector<char>& buf) {
    for (;;) {
      const ssize_t n = read(in, buf.data(), buf.size());
      if (n <= 0) return;
      const int64_t now = now_ns(), leaves = link.admit(now, n);
      if (leaves < 0) {
        ++dropped_full;
      } else if (leaves <= now && on_link.empty()) {
        deliver(buf.data(), size_t(n));
      } else {
        on_link.push_back({leaves, std::vector<char>(buf.begin(), buf.begin() + n)});
      }
    }
  }
};

void write_pidfile(const std::string& file) {
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f || std::fprintf(f, "%d\n", int(getpid())) < 0 || std::fclose(f) != 0) die("cannot write the pid file " + file);
}

void run(Direction (&dirs)[2]) {
  std::vector<char> buf(65536 + 4096);  // a 64 KB GSO frame, its virtio-net and Ethernet headers
  while (!g_stop) {
    int64_t next = -1;
    const int64_t now = now_ns();
    for (Direction& d : dirs) {
      const int64_t t = d.deliver_due(now);
      if (t >= 0 && (next < 0 || t < next)) next = t;
    }
    pollfd fds[2] = {{dirs[0].in, POLLIN, 0}, {dirs[1].in, POLLIN, 0}};
    timespec wait{};
    if (next >= 0) {
      const int64_t ns = next > now ? next - now : 0;
      wait = {time_t(ns / 1000000000), long(ns % 1000000000)};
    }
    if (ppoll(fds, 2, next >= 0 ? &wait : nullptr, nullptr) < 0 && errno != EINTR)
      die(std::string("poll: ") + std::strerror(errno));
    for (int i = 0; i < 2; ++i)
      if (fds[i].revents & POLLIN) dirs[i].take_arrivals(buf);
  }
}

}  // namespace

int main(int argc, char** argv) {
  link_model::LinkArgs args;
  const std::string err = link_model::parse_link_args(std::vector<std::string>(argv + 1, argv + argc), &args);
  if (!err.empty()) {
    std::fprintf(stderr, "tool_tap_link: %s\n%s\n", err.c_str(), link_model::link_usage());
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const std::string home = "/proc/self/ns/net";
  const int home_fd = open(home.c_str(), O_RDONLY | O_CLOEXEC);
  if (home_fd < 0) die("cannot open " + home + ": " + std::strerror(errno));
  enter_netns(args.netns_a);
  const int a = open_tap(args.tap, args.netns_a);
  enter_netns(args.netns_b);
  const int b = open_tap(args.tap, args.netns_b);
  if (setns(home_fd, CLONE_NEWNET) != 0) die("cannot return to the root network namespace");
  close(home_fd);
  write_pidfile(args.pidfile);
  Direction dirs[2] = {{"A -> B", a, b, LinkDirection(args.spec), {}}, {"B -> A", b, a, LinkDirection(args.spec), {}}};
  run(dirs);
  for (const Direction& d : dirs)
    std::fprintf(stderr, "tool_tap_link: %s: %llu frames, %llu bytes; %llu dropped by the full queue, %llu lost\n",
                 d.name.c_str(), (unsigned long long)d.frames, (unsigned long long)d.bytes,
                 (unsigned long long)d.dropped_full, (unsigned long long)d.lost_down);
  return 0;
}
