// Tests of the Gloo gate (comm/pair_gate, comm/gloo_mesh, comm/gloo_handover): the handshake's
// messages, two in-process gates meeting (and refusing strangers), the one deadline naming the
// missing ranks, and end to end: a real 4-rank --gloo job that a stranger running as `nobody`
// attacks at every listening socket of its ranks, and an 8-rank job with one rank stopped in the
// connect.
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "comm/pair_gate.h"
#include "comm/socket_io.h"
#include "comm/store_protocol.h"
#include "tests/fault_harness.h"
#include "tests/go_file.h"
#include "tests/proc_listeners.h"
#include "tests/test_util.h"

using namespace faultharness;

namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// ---- The handshake's messages. ----

TEST(PairGate, HelloWithTheSecretIsAccepted) {
  // Rank 5 of 8 dials rank 2's gate for mesh 1.
  const std::string ns = random_bytes(kGateNonceBytes), nc = random_bytes(kGateNonceBytes);
  const std::string hello = gate_client_hello(kSecret, ns, nc, 1, 5, 2);
  ASSERT_EQ(hello.size(), kGateHelloBytes);
  const GateVerdict v = check_gate_hello(kSecret, ns, hello, 2, 2, 8);
  EXPECT_TRUE(v.ok) << v.why;
  EXPECT_EQ(v.mesh, 1);
  EXPECT_EQ(v.from, 5);
}

TEST(PairGate, HelloIsRefusedForWrongSecretNonceMeshRankOrLength) {
  const std::string ns = random_bytes(kGateNonceBytes), nc = random_bytes(kGateNonceBytes);
  auto accepted = [&](const std::string& hello) { return check_gate_hello(kSecret, ns, hello, 2, 2, 8).ok; };
  ASSERT_TRUE(accepted(gate_client_hello(kSecret, ns, nc, 0, 5, 2)));
  EXPECT_FALSE(accepted(gate_client_hello("wrong", ns, nc, 0, 5, 2)));
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, random_bytes(16), nc, 0, 5, 2))) << "a hello over another nonce";
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, ns, nc, 0, 5, 3))) << "proving 5 -> 3 at rank 2's gate";
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, ns, nc, 2, 5, 2))) << "mesh 2 of 2";
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, ns, nc, 0, 2, 2))) << "from == to";
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, ns, nc, 0, 1, 2))) << "from < to: rank 2 dials rank 1";
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, ns, nc, 0, 8, 2))) << "from past the world";
  std::string tampered = gate_client_hello(kSecret, ns, nc, 0, 5, 2);
  tampered[3] = 6;  // claims rank 6 with rank 5's proof
  EXPECT_FALSE(accepted(tampered));
  EXPECT_FALSE(accepted(std::string(kGateHelloBytes, 'x')));
  EXPECT_FALSE(accepted(gate_client_hello(kSecret, ns, nc, 0, 5, 2) + "x"));
}

// ---- Gates in this process (one thread per rank). ----

// A plain TCP client of a gate: connects, optionally writes bytes, and keeps the socket.
int stranger_connect(const std::string& addr, const std::string& bytes) {
  auto ai = socket_io::resolve_host_port(addr, "gate");
  const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(fd, ai->ai_addr, ai->ai_addrlen), 0) << std::strerror(errno);
  if (!bytes.empty()) {
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
  }
  return fd;
}

// Reads until the peer closes (true) or 20 s pass (false); what arrived is discarded.
bool wait_closed(int fd) {
  for (int i = 0; i < 2000; ++i) {
    pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, 10) == 1) {
      char buf[256];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }
  return false;
}

struct Ranks {
  std::vector<std::unique_ptr<PairGate>> gates;
  std::vector<std::string> addrs;
  Ranks(int size, int meshes) {
    for (int r = 0; r < size; ++r) {
      gates.emplace_back(new PairGate("127.0.0.1", r, size, meshes));
      addrs.push_back(gates.back()->address());
    }
  }
};

// Rank r's connect_all in a thread; its error (empty when it succeeded) in *error.
std::thread run_rank(Ranks* ranks, int r, const std::string& secret, double seconds, std::string* error) {
  return std::thread([=] {
    try {
      const auto deadline = PairGate::Clock::now() + std::chrono::milliseconds(int(seconds * 1000));
      ranks->gates[r]->connect_all(secret, ranks->addrs, deadline, "the test's limit");
    } catch (const std::exception& e) {
      *error = e.what();
    }
  });
}

// The bytes one side writes on its socket arrive, alone, on the other side's socket of the same pair.
void expect_connected(PairGate* a, int ra, PairGate* b, int rb, int mesh) {
  const int fa = a->take(mesh, rb), fb = b->take(mesh, ra);
  ASSERT_GE(fa, 0);
  ASSERT_GE(fb, 0);
  const std::string msg = "mesh " + std::to_string(mesh) + " from " + std::to_string(ra);
  ASSERT_EQ(::send(fa, msg.data(), msg.size(), MSG_NOSIGNAL), ssize_t(msg.size()));
  ::shutdown(fa, SHUT_WR);
  int flags = fcntl(fb, F_GETFL);
  fcntl(fb, F_SETFL, flags & ~O_NONBLOCK);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::recv(fb, buf, sizeof buf, 0)) > 0;) got.append(buf, size_t(n));
  EXPECT_EQ(got, msg) << "the stream is clean after the handshake";
  ::close(fa);
  ::close(fb);
}

TEST(PairGate, ThreeRanksConnectBothMeshesOverCleanStreams) {
  Ranks ranks(3, 2);
  std::string err[3];
  std::vector<std::thread> t;
  for (int r = 0; r < 3; ++r) t.push_back(run_rank(&ranks, r, kSecret, 30, &err[r]));
  for (auto& th : t) th.join();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(err[r], "") << "rank " << r;
  for (int m = 0; m < 2; ++m) {
    expect_connected(ranks.gates[0].get(), 0, ranks.gates[1].get(), 1, m);
    expect_connected(ranks.gates[2].get(), 2, ranks.gates[0].get(), 0, m);
    expect_connected(ranks.gates[1].get(), 1, ranks.gates[2].get(), 2, m);
  }
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks.gates[r]->dropped(), 0);
}

TEST(PairGate, StrangersAreDroppedAndTheGateKeepsServing) {
  Ranks ranks(2, 1);
  std::string err0, err1;
  // Rank 0's gate is the one rank 1 dials.
  std::thread gate = run_rank(&ranks, 0, kSecret, 60, &err0);
  const std::string addr = ranks.addrs[0];
  // Garbage, a hello proving the wrong secret, and a silent connection, before the real rank comes.
  const int garbage = stranger_connect(addr, std::string(kGateHelloBytes, '\x7f'));
  const int wrong = stranger_connect(addr, "");
  std::string ns;
  {
    int fl = fcntl(wrong, F_GETFL);
    fcntl(wrong, F_SETFL, fl & ~O_NONBLOCK);
    ns.resize(kGateNonceBytes);
    ASSERT_EQ(::recv(wrong, &ns[0], ns.size(), MSG_WAITALL), ssize_t(ns.size()));
    const std::string hello = gate_client_hello("not the secret", ns, random_bytes(16), 0, 1, 0);
    ASSERT_EQ(::send(wrong, hello.data(), hello.size(), MSG_NOSIGNAL), ssize_t(hello.size()));
  }
  const int silent = stranger_connect(addr, "");
  EXPECT_TRUE(wait_closed(garbage)) << "garbage is closed";
  EXPECT_TRUE(wait_closed(wrong)) << "a wrong proof is closed";
  EXPECT_TRUE(wait_closed(silent)) << "a silent stranger is closed at its deadline";
  std::thread real = run_rank(&ranks, 1, kSecret, 30, &err1);
  real.join();
  gate.join();
  EXPECT_EQ(err0, "");
  EXPECT_EQ(err1, "");
  expect_connected(ranks.gates[0].get(), 0, ranks.gates[1].get(), 1, 0);
  EXPECT_EQ(ranks.gates[0]->dropped(), 3);
  EXPECT_NE(ranks.gates[0]->dropped_summary().find("dropped 3 connections to its Gloo gate that did not prove the "
                                                   "job secret (from 127.0.0.1:"),
            std::string::npos)
      << ranks.gates[0]->dropped_summary();
  for (int fd : {garbage, wrong, silent}) ::close(fd);
}

TEST(PairGate, TheOneDeadlineNamesEveryMissingRank) {
  // Ranks 1 and 3 opened their gates and never connect; ranks 0 and 2 do.
  Ranks ranks(4, 2);
  std::string err0, err2;
  std::thread t0 = run_rank(&ranks, 0, kSecret, 1.5, &err0);
  std::thread t2 = run_rank(&ranks, 2, kSecret, 1.5, &err2);
  t0.join();
  t2.join();
  EXPECT_EQ(err2,
            "gloo could not connect: ranks 1, 3 never completed the connect to this rank (2 of 3 peers "
            "missing) within the test's limit");
  EXPECT_EQ(err0,
            "gloo could not connect: ranks 1, 3 never completed the connect to this rank (2 of 3 peers "
            "missing) within the test's limit");
}

TEST(PairGate, AWrongSecretNeverConnects) {
  Ranks ranks(2, 1);
  std::string err0, err1;
  std::thread t0 = run_rank(&ranks, 0, kSecret, 1.5, &err0);
  std::thread t1 = run_rank(&ranks, 1, "another job's secret", 1.5, &err1);
  t0.join();
  t1.join();
  EXPECT_NE(err0.find("rank 1 never completed the connect to this rank (1 of 1 peers missing)"), std::string::npos)
      << err0;
  EXPECT_NE(err0.find("did not prove the job secret"), std::string::npos) << err0;
  EXPECT_NE(err1.find("rank 0 never completed"), std::string::npos) << err1;
}

// ---- End to end. ----

// A process running as `nobody` (when the test runs as root) that connects to every IPv4 address
// the test writes to it ("<ip>:<port>\n"), writes junk on every other connection and holds them
// all; it reports each connection it made ("<ip>:<port>\n") and exits when its input closes.
class Stranger {
 public:
  Stranger() {
    int to[2], from[2];
    if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(to[1]);
      ::close(from[0]);
      run(to[0], from[1]);
    }
    ::close(to[0]);
    ::close(from[1]);
    out_ = to[1];
    in_ = from[0];
    fcntl(in_, F_SETFL, O_NONBLOCK);
  }
  ~Stranger() { stop(); }
  void attack(const std::string& address) {
    if (!sent_.insert(address).second) return;
    const std::string line = address + "\n";
    (void)!::write(out_, line.data(), line.size());
  }
  // The addresses it has connected to so far.
  const std::set<std::string>& connected() {
    char buf[256];
    for (ssize_t n; (n = ::read(in_, buf, sizeof buf)) > 0;) {
      partial_.append(buf, size_t(n));
      for (size_t nl; (nl = partial_.find('\n')) != std::string::npos; partial_.erase(0, nl + 1))
        connected_.insert(partial_.substr(0, nl));
    }
    return connected_;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::close(out_);
    ::close(in_);
    int st;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  bool dropped_privileges() const { return ::geteuid() == 0; }

 private:
  [[noreturn]] static void run(int in, int out) {
    if (::geteuid() == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
          ::setresuid(65534, 65534, 65534) != 0)
        ::_exit(3);
    }
    std::vector<int> held;
    std::string partial;
    char buf[256];
    for (ssize_t n; (n = ::read(in, buf, sizeof buf)) > 0;) {
      partial.append(buf, size_t(n));
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
        const std::string address = partial.substr(0, nl);
        const size_t colon = address.rfind(':');
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(uint16_t(std::atoi(address.c_str() + colon + 1)));
        if (colon == std::string::npos || inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr) != 1)
          continue;
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
          ::close(fd);
          continue;
        }
        if (held.size() % 2 == 0) {
          const std::string junk(200, 'J');
          (void)!::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
        }
        held.push_back(fd);
        const std::string line = address + "\n";
        (void)!::write(out, line.data(), line.size());
      }
    }
    ::_exit(0);
  }
  pid_t pid_ = -1;
  int out_ = -1, in_ = -1;
  std::set<std::string> sent_, connected_;
  std::string partial_;
};

// The IPv4 addresses ("ip:port") the processes `pids` listen on (tests/proc_listeners.h): each
// rank's gate and Gloo's short-lived pair listeners, every rank on its own loopback address.
std::set<std::string> listening_addresses(const std::vector<pid_t>& pids) {
  std::set<std::string> out;
  for (pid_t pid : pids)
    for (const proclisteners::TcpListener& l : proclisteners::tcp_listeners_of(pid))
      if (!l.v6) out.insert(l.address());
  return out;
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<pid_t> pids_of(const std::map<int, pid_t>& ranks) {
  std::vector<pid_t> out;
  for (const auto& [rank, pid] : ranks) out.push_back(pid);
  return out;
}

class GlooGate : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    marker_ = unique_marker();
    dir_ = "/tmp/baresgd-" + marker_;
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_ << ": " << std::strerror(errno);
    train_ = abs_path(testutil::train_bin());
    launch_ = abs_path(testutil::launch_bin());
    data_ = abs_path("data");
  }
  void TearDown() override {
    kill_procs_with(marker_);
    std::system(("rm -rf '" + dir_ + "'").c_str());
    EXPECT_GE(wait_no_procs(marker_, 30), 0) << "processes survived teardown";
  }
  // ./launch -np N --gloo, rank `held` (if >= 0) waiting for dir_/go before it starts ./train.
  std::vector<std::string> job(int np, int held, const std::vector<std::string>& args) const {
    const std::string wait = held >= 0 ? "if [ \"$BARESGD_RANK\" = " + std::to_string(held) + " ]; then " +
                                             testutil::sh_wait_for(dir_ + "/go") + "fi; "
                                       : "";
    std::vector<std::string> a = {
        launch_,   "-np", std::to_string(np),          "--gloo", "--network-interface", "lo",
        "/bin/sh", "-c",  wait + "exec \"$0\" \"$@\"", train_,   "--data-dir",          data_};
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }
  std::string marker_, dir_, train_, launch_, data_;
};

// Issue 26 case 1: a stranger (`nobody` under root, as CI runs) connects to every listening socket
// of the ranks of a 4-rank --gloo job, writing junk on half of them and holding all. Rank 3 starts
// only once the stranger holds connections to three of the ranks' listeners (their gates, opened
// before the hello), so the attack is in place before any pair connects; the scan goes on until
// the job ends (catching Gloo's own short-lived pair listeners too). The job must finish with
// the parameters of an undisturbed run, and the ranks must report the dropped strangers.
TEST_F(GlooGate, StrangerAsNobodyCannotTakeAPair) {
  const std::vector<std::string> args = {"--max-steps", "3", "--batch-size", "16", "--log-interval", "1"};
  Proc quiet(job(4, -1, plus(args, {"--dump-params", dir_ + "/quiet.bin"})));
  ASSERT_EQ(quiet.code(300), 0) << quiet.err();

  Stranger stranger;
  Proc attacked(job(4, 3, plus(args, {"--dump-params", dir_ + "/attacked.bin"})));
  const auto t0 = Clock::now();
  bool released = false;
  while (attacked.running() && secs_since(t0) < 300) {
    for (const std::string& address : listening_addresses(pids_of(rank_pids(marker_)))) stranger.attack(address);
    if (!released && stranger.connected().size() >= 3) released = testutil::touch_file(dir_ + "/go");
    ::usleep(1000);
  }
  const size_t attacked_ports = stranger.connected().size();
  stranger.stop();
  const int code = attacked.code(60);
  const std::string err = attacked.err();
  ASSERT_TRUE(released) << "the stranger never reached three listeners: " << err;
  EXPECT_EQ(code, 0) << err;
  EXPECT_EQ(read_file(dir_ + "/attacked.bin"), read_file(dir_ + "/quiet.bin")) << "parameters differ";
  EXPECT_FALSE(read_file(dir_ + "/quiet.bin").empty());
  EXPECT_TRUE(contains(err, "to its Gloo gate that did not prove the job secret (from 127.0.0.1:")) << err;
  std::cerr << "[ sample ] the stranger" << (stranger.dropped_privileges() ? " (as nobody)" : "") << " reached "
            << attacked_ports << " listening sockets of the ranks\n";
  for (const std::string& l : lines_of(err))
    if (contains(l, "dropped")) std::cerr << "[ sample ] " << l << "\n";
}

// Issue 26 case 4: rank 5 of 8 stops itself (BARESGD_TEST_STOP_IN_CONNECT) after its hello, in the
// connect. With --start-timeout 5 every other rank fails at the one deadline of the connect, and
// the error names rank 5 and only rank 5.
TEST_F(GlooGate, AStoppedRankIsNamedAtTheOneDeadline) {
  std::vector<std::string> argv = job(8, -1, {"--max-steps", "1", "--start-timeout", "5", "--batch-size", "8"});
  argv.insert(argv.begin(), {"/usr/bin/env", "BARESGD_TEST_STOP_IN_CONNECT=5"});
  Proc stopped(argv);
  const int code = stopped.code(300);
  const std::string err = stopped.err();
  EXPECT_NE(code, 0) << err;
  EXPECT_TRUE(contains(err,
                       "gloo could not connect: rank 5 never completed the connect to this rank (1 of 7 peers "
                       "missing) within 5 s"))
      << err;
  const std::regex named("ranks? ([0-9, ]+) never completed");
  int lines = 0;
  for (const std::string& l : lines_of(err)) {
    std::smatch m;
    if (!std::regex_search(l, m, named)) continue;
    ++lines;
    EXPECT_EQ(m[1].str(), "5") << l;
  }
  EXPECT_GE(lines, 1) << err;
}

}  // namespace
