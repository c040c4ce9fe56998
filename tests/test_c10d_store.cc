// test_c10d_store: the c10d TCPStore client (comm/c10d_store_client) against PyTorch's real
// TCPStore (Debian's python3-torch, test-only) and against a store that never answers; the
// server (comm/c10d_store_server, what rank 0 serves when torchrun's agent store is off) against
// our client, raw bytes, and PyTorch's own TCPStore client.
//   C10dWire         requests and replies, both directions; the server's decoder and its limits
//   C10dStore        our client against PyTorch's server, a silent one, a closed port
//   C10dStoreServer  our server: every query, WAIT answered late, one-line errors (port in use,
//                    bad requests close only their connection), PyTorch's client against it
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm/c10d_store_client.h"
#include "comm/c10d_store_server.h"
#include "comm/c10d_wire.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

using namespace testutil;
using std::chrono::milliseconds;

namespace {

const char* kTorchPython = "/usr/bin/python3";  // Debian's, with python3-torch (PATH may have another)

bool have_torch() {
  return run(std::string(kTorchPython) + " -c 'import torch.distributed' 2>/dev/null", 60).status == 0;
}

// A background process started by `sh -c`, its pid in DIR/pid, killed by that pid at the end.
class Background {
 public:
  Background(const std::string& dir, const std::string& cmd) : dir_(dir) {
    run("(" + cmd + ") > " + dir + "/out 2> " + dir + "/err & echo $! > " + dir + "/pid", 30);
  }
  ~Background() {
    const std::string pid = read_file(dir_ + "/pid");
    if (!pid.empty()) ::kill(std::stoi(pid), SIGKILL);
  }
  // Waits (up to 60 s) for the first line of stdout.
  std::string first_line() const {
    for (int i = 0; i < 600; ++i) {
      const std::string out = read_file(dir_ + "/out");
      if (out.find('\n') != std::string::npos) return out.substr(0, out.find('\n'));
      std::this_thread::sleep_for(milliseconds(100));
    }
    return "";
  }
  std::string err() const { return read_file(dir_ + "/err"); }

 private:
  std::string dir_;
};

}  // namespace

TEST(C10dWire, RequestsAreTorchsLayout) {
  EXPECT_EQ(encode_c10d_set("k", "vv"), std::string("\x00\x01\0\0\0\0\0\0\0k\x02\0\0\0\0\0\0\0vv", 20));
  EXPECT_EQ(encode_c10d_get("ab"), std::string("\x02\x02\0\0\0\0\0\0\0ab", 11));
  EXPECT_EQ(encode_c10d_add("a", -1), std::string("\x03\x01\0\0\0\0\0\0\0a", 10) + std::string(8, '\xff'));
  EXPECT_EQ(encode_c10d_check({"a"}), std::string("\x04\x01\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0a", 18));
  EXPECT_TRUE(c10d_check_reply_ready(0));
  EXPECT_FALSE(c10d_check_reply_ready(1));
  EXPECT_THROW(c10d_check_reply_ready(7), std::runtime_error);
  EXPECT_THROW(c10d_get_reply_length(std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8).data()), std::runtime_error);
}

// Our set/check/get/add against torch.distributed.TCPStore, each side reading what the other wrote.
TEST(C10dStore, TalksToPyTorchsTcpStore) {
  if (!have_torch()) BARESGD_SKIP(kTorchPython << " cannot import torch.distributed (python3-torch not installed)");
  const std::string dir = make_temp_dir("c10d-real");
  write_file(dir + "/server.py",
             "import datetime, sys, torch.distributed as d\n"
             "s = d.TCPStore('127.0.0.1', 0, 1, True, timeout=datetime.timedelta(seconds=60))\n"
             "s.set('from_py', 'hello from torch')\n"
             "print(s.port, flush=True)\n"
             "s.wait(['bye'])\n"
             "ok = s.get('from_c') == b'hello from baresgd' and s.add('counter', 0) == 7\n"
             "print('ok' if ok else 'bad', flush=True)\n"
             "s.set('done', '1')\n"
             "s.wait(['seen'])\n");
  Background server(dir, std::string(kTorchPython) + " " + dir + "/server.py");
  const std::string port = server.first_line();
  ASSERT_FALSE(port.empty()) << server.err();
  C10dStoreClient c("127.0.0.1:" + port, milliseconds(20000));
  ASSERT_TRUE(c.check("from_py"));
  EXPECT_EQ(c.get("from_py"), "hello from torch");
  EXPECT_FALSE(c.check("missing"));
  EXPECT_EQ(c.add("counter", 5), 5);
  EXPECT_EQ(c.add("counter", 2), 7);
  c.set("from_c", "hello from baresgd");
  c.set("bye", "1");
  bool done = false;
  for (int i = 0; i < 600 && !(done = c.check("done")); ++i) std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE(done) << "the torch side never set 'done'\n" << read_file(dir + "/out") << server.err();
  EXPECT_NE(read_file(dir + "/out").find("\nok\n"), std::string::npos) << read_file(dir + "/out") << server.err();
  c.set("seen", "1");  // the torch side (and its store) may go now
  run("rm -rf " + dir);
}

// A listener that accepts and never answers: the request times out with one line naming it.
TEST(C10dStore, SilentStoreTimesOutNamingTheAddress) {
  const std::string dir = make_temp_dir("c10d-silent");
  Background silent(dir,
                    "python3 -c 'import socket,time\n"
                    "s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(4)\n"
                    "print(s.getsockname()[1], flush=True)\n"
                    "c=s.accept(); time.sleep(60)'");
  const std::string port = silent.first_line();
  ASSERT_FALSE(port.empty()) << silent.err();
  C10dStoreClient c("127.0.0.1:" + port, milliseconds(1000));
  try {
    c.check("k");
    FAIL() << "a store that never answers was taken for an answer";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m, "torchrun's c10d TCPStore at 127.0.0.1:" + port + " did not answer check of key 'k' within 5000 ms");
  }
  EXPECT_THROW(c.check("k"), std::runtime_error);  // the connection is closed after an error
  run("rm -rf " + dir);
}

TEST(C10dStore, ClosedPortIsNamedWithTheTimeout) {
  try {
    C10dStoreClient c("127.0.0.1:1", milliseconds(300));
    FAIL() << "connected to a closed port";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "torchrun's c10d TCPStore at 127.0.0.1:1 not reachable within 300 ms: Connection refused");
  }
}

// ---- The server's side of the wire. ----

namespace {

std::string u64(uint64_t v) {
  std::string s;
  put_u64le(&s, v);
  return s;
}
std::string str(const std::string& s) { return u64(s.size()) + s; }

// Parses a whole request; also checks that every shorter prefix of it asks for more bytes.
C10dRequest parse_whole(const std::string& bytes) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    C10dRequest r;
    EXPECT_EQ(parse_c10d_request(bytes.data(), n, &r), 0u) << "a " << n << "-byte prefix was taken as whole";
  }
  C10dRequest r;
  EXPECT_EQ(parse_c10d_request(bytes.data(), bytes.size(), &r), bytes.size());
  return r;
}

std::string parse_error(const std::string& bytes) {
  C10dRequest r;
  try {
    parse_c10d_request(bytes.data(), bytes.size(), &r);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(C10dWire, ServerDecodesEveryQueryOnlyWhenWhole) {
  C10dRequest r = parse_whole(encode_c10d_set("/k", std::string("v\0w", 3)));
  EXPECT_EQ(r.query, C10dQuery::kSet);
  EXPECT_EQ(r.keys, std::vector<std::string>{"/k"});
  EXPECT_EQ(r.value, std::string("v\0w", 3));
  r = parse_whole(encode_c10d_add("/n", -5));
  EXPECT_EQ(r.query, C10dQuery::kAdd);
  EXPECT_EQ(r.delta, -5);
  r = parse_whole(encode_c10d_check({"/a", "/b"}));
  EXPECT_EQ(r.query, C10dQuery::kCheck);
  EXPECT_EQ(r.keys, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(parse_whole(encode_c10d_get("/g")).query, C10dQuery::kGet);
  r = parse_whole("\x01" + str("/cs") + str("") + str("x"));  // COMPARE_SET as PyTorch sends it
  EXPECT_EQ(r.query, C10dQuery::kCompareSet);
  EXPECT_EQ(r.value, "");
  EXPECT_EQ(r.desired, "x");
  r = parse_whole("\x05" + u64(1) + str("/k"));
  EXPECT_EQ(r.query, C10dQuery::kWait);
  EXPECT_EQ(r.keys, std::vector<std::string>{"/k"});
  EXPECT_EQ(parse_whole("\x06").query, C10dQuery::kGetNumKeys);
  EXPECT_EQ(parse_whole("\x08" + str("/k")).query, C10dQuery::kDeleteKey);
  // Two requests in one read: the first is taken, the second waits its turn.
  const std::string two = encode_c10d_get("/a") + encode_c10d_get("/bb");
  EXPECT_EQ(parse_c10d_request(two.data(), two.size(), &r), encode_c10d_get("/a").size());
  EXPECT_EQ(r.keys, std::vector<std::string>{"/a"});
  EXPECT_EQ(encode_c10d_value_reply("xy"), u64(2) + "xy");
  EXPECT_EQ(encode_c10d_i64_reply(-1), std::string(8, '\xff'));
}

// Lengths are refused as soon as their 8 bytes arrive: the server never waits for (or buffers) a
// 1 TiB key.
TEST(C10dWire, ServerRefusesUnknownQueriesAndLengthsOverTheLimits) {
  EXPECT_EQ(parse_error("\x63"), "unknown query 0x63 (not a c10d TCPStore client?)");
  EXPECT_EQ(parse_error("\x02" + u64(uint64_t(1) << 40)),
            "GET request announced a 1099511627776-byte key, over the limit of 65536");
  EXPECT_EQ(parse_error(std::string(1, '\0') + str("/k") + u64(kC10dMaxValueBytes + 1)),
            "SET request announced a 67108865-byte value, over the limit of 67108864");
  EXPECT_EQ(parse_error("\x05" + u64(kC10dMaxKeysPerRequest + 1)),
            "WAIT request named 65537 keys, over the limit of 65536");
  EXPECT_EQ(parse_error("\x02" + u64(kC10dMaxKeyBytes) + "abc"), "(no error)");  // legal, and not whole yet
}

// ---- The server. ----

namespace {

// A raw connection to the server, to send bytes our client never would.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(const std::string& bytes) { ASSERT_EQ(::write(fd_, bytes.data(), bytes.size()), ssize_t(bytes.size())); }
  // n bytes, or fewer if the server closed the connection (waits up to 20 s).
  std::string receive(size_t n) {
    std::string out;
    while (out.size() < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20000) != 1) break;
      char buf[256];
      const ssize_t got = ::read(fd_, buf, std::min(sizeof buf, n - out.size()));
      if (got <= 0) break;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }
  // True once the server has closed the connection (read gives end of stream; waits up to 20 s).
  bool closed_by_server() {
    pollfd p{fd_, POLLIN, 0};
    char c;
    return ::poll(&p, 1, 20000) == 1 && ::read(fd_, &c, 1) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// The problem lines a server reported, for the tests to read.
struct Problems {
  std::mutex mu;
  std::vector<std::string> lines;
  C10dStoreServer::ProblemSink sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mu);
    return lines;
  }
};

}  // namespace

TEST(C10dStoreServer, ServesOurClient) {
  C10dStoreServer server("127.0.0.1", 0);
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.where(), "127.0.0.1:" + std::to_string(server.port()));
  C10dStoreClient a("127.0.0.1:" + std::to_string(server.port()), milliseconds(5000));
  C10dStoreClient b("127.0.0.1:" + std::to_string(server.port()), milliseconds(5000));
  EXPECT_FALSE(b.check("k"));
  a.set("k", std::string("v\0v", 3));
  ASSERT_TRUE(b.check("k"));
  EXPECT_EQ(b.get("k"), std::string("v\0v", 3));
  EXPECT_EQ(a.add("claim/0", 1), 1);
  EXPECT_EQ(b.add("claim/0", 1), 2);  // a second claim of the same rank sees it taken
  EXPECT_EQ(b.add("claim/0", -3), -1);
  EXPECT_EQ(a.get("claim/0"), "-1");  // counters are decimal text, as PyTorch stores them
  a.set("k", "w");
  EXPECT_EQ(b.get("k"), "w");
}

// WAIT is answered once its last key is set, by another client, with other replies in between.
TEST(C10dStoreServer, WaitIsAnsweredWhenItsLastKeyIsSet) {
  C10dStoreServer server("127.0.0.1", 0);
  RawConnection waiter(server.port());
  ASSERT_TRUE(waiter.connected());
  C10dStoreClient setter("127.0.0.1:" + std::to_string(server.port()), milliseconds(5000));
  waiter.send("\x05" + u64(2) + str("/a") + str("/b"));
  setter.set("a", "1");
  ASSERT_TRUE(setter.check("a"));       // a round trip: the server has taken the SET
  waiter.send(std::string("\x06", 1));  // GETNUMKEYS: its reply must come first, alone
  EXPECT_EQ(waiter.receive(8), u64(1)) << "WAIT was answered before its last key was set";
  setter.set("b", "2");
  EXPECT_EQ(waiter.receive(1), std::string(1, '\0'));  // STOP_WAITING
  waiter.send("\x05" + u64(1) + str("/a"));            // every key already set: answered at once
  EXPECT_EQ(waiter.receive(1), std::string(1, '\0'));
  waiter.send("\x08" + str("/a"));
  EXPECT_EQ(waiter.receive(8), u64(1));
  waiter.send("\x08" + str("/a"));
  EXPECT_EQ(waiter.receive(8), u64(0));
  waiter.send("\x01" + str("/cs") + str("") + str("x"));  // missing, expected "": set
  EXPECT_EQ(waiter.receive(9), str("x"));
  waiter.send("\x01" + str("/cs") + str("y") + str("z"));  // holds "x", not "y": unchanged
  EXPECT_EQ(waiter.receive(9), str("x"));
  waiter.send("\x01" + str("/cs") + str("x") + str("z"));
  EXPECT_EQ(waiter.receive(9), str("z"));
}

// A request the server cannot serve closes that connection only, with one line naming the store,
// the client and the request; everyone else carries on.
TEST(C10dStoreServer, BadRequestsCloseOnlyTheirConnection) {
  Problems problems;
  C10dStoreServer server("127.0.0.1", 0, problems.sink());
  const std::string where = "c10d TCPStore on 127.0.0.1:" + std::to_string(server.port());
  C10dStoreClient good("127.0.0.1:" + std::to_string(server.port()), milliseconds(5000));
  good.set("text", "abc");
  const std::pair<std::string, std::string> cases[] = {
      {"\x63", "unknown query 0x63 (not a c10d TCPStore client?)"},
      {encode_c10d_get("/nothing"), "GET of key '/nothing', which is not set (a client asks only after CHECK or WAIT)"},
      {encode_c10d_add("/text", 1), "ADD to key '/text', whose value is not a decimal integer"},
      {"\x07" + str("/k"), "WATCH_KEY of key '/k': callbacks are not served by baresgd's c10d store"},
      {"\x02" + u64(uint64_t(1) << 40), "GET request announced a 1099511627776-byte key, over the limit of 65536"},
  };
  size_t seen = 0;
  for (const auto& c : cases) {
    RawConnection bad(server.port());
    ASSERT_TRUE(bad.connected());
    bad.send(c.first);
    EXPECT_TRUE(bad.closed_by_server()) << c.second;
    const std::vector<std::string> lines = problems.get();
    ASSERT_EQ(lines.size(), ++seen) << c.second;
    EXPECT_EQ(lines.back().rfind(where + ": closed the connection from 127.0.0.1:", 0), 0u) << lines.back();
    EXPECT_NE(lines.back().find(": " + c.second), std::string::npos) << lines.back();
    EXPECT_EQ(lines.back().find('\n'), std::string::npos);
  }
  EXPECT_EQ(good.get("text"), "abc");
}

TEST(C10dStoreServer, PortInUseIsOneLineNamingIt) {
  C10dStoreServer first("127.0.0.1", 0);
  const std::string port = std::to_string(first.port());
  try {
    C10dStoreServer second("127.0.0.1", first.port());
    FAIL() << "two servers on one port";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot serve the c10d TCPStore on 127.0.0.1:" + port + ": port " + port +
                                         " is already in use on 127.0.0.1 (another job's store, or another program?)");
  }
  try {
    C10dStoreServer bad("no-such-host.invalid", 29500);
    FAIL() << "served on a host that does not resolve";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("cannot serve the c10d TCPStore on no-such-host.invalid:29500: cannot resolve "
                      "'no-such-host.invalid': ",
                      0),
              0u)
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
}

// "localhost" (torchrun's MASTER_ADDR on a host whose name is localhost) binds its IPv4 address at
// least, and a client of "localhost" finds it whichever address it tries first.
TEST(C10dStoreServer, LocalhostIsServedOnLoopback) {
  C10dStoreServer server("localhost", 0);
  EXPECT_EQ(server.where(), "localhost:" + std::to_string(server.port()));
  C10dStoreClient by_name("localhost:" + std::to_string(server.port()), milliseconds(5000));
  C10dStoreClient by_v4("127.0.0.1:" + std::to_string(server.port()), milliseconds(5000));
  by_name.set("k", "v");
  EXPECT_TRUE(by_v4.check("k"));
}

// PyTorch's own client (torch.distributed.TCPStore with is_master=False, as a worker of rank > 0
// makes it) against our server: every call a worker makes, and keys set by one side read by the
// other.
TEST(C10dStoreServer, PyTorchsClientWorksAgainstIt) {
  if (!have_torch()) BARESGD_SKIP(kTorchPython << " cannot import torch.distributed (python3-torch not installed)");
  C10dStoreServer server("127.0.0.1", 0);
  const std::string addr = "127.0.0.1:" + std::to_string(server.port());
  C10dStoreClient ours(addr, milliseconds(5000));
  ours.set("from_c", "hello from baresgd");
  const std::string dir = make_temp_dir("c10d-server-py");
  write_file(dir + "/client.py",
             "import datetime, sys, torch.distributed as d\n"
             "s = d.TCPStore('127.0.0.1', int(sys.argv[1]), 2, False, timeout=datetime.timedelta(seconds=30))\n"
             "s.set('from_py', 'hello from torch')\n"
             "assert s.get('from_c') == b'hello from baresgd'\n"
             "assert s.add('n', 5) == 5 and s.add('n', -2) == 3 and s.get('n') == b'3'\n"
             "s.wait(['from_c', 'n'])\n"
             "try:\n"
             "    s.wait(['never'], datetime.timedelta(milliseconds=200)); sys.exit('waited for a missing key')\n"
             "except Exception as e: assert 'Timeout' in str(e), e\n"
             "assert s.compare_set('cs', '', 'x') == b'x' and s.compare_set('cs', 'q', 'y') == b'x'\n"
             "p = d.PrefixStore('/worker/attempt_0', s); p.set('a', 'b')\n"
             "assert p.get('a') == b'b'\n"
             "assert s.delete_key('cs') and not s.delete_key('cs')\n"
             "print(s.num_keys())\n");
  RunResult r = run(std::string(kTorchPython) + " " + dir + "/client.py " + std::to_string(server.port()), 120);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  // init/ (the client's worker count), /from_c, /from_py, /n, //worker/attempt_0/a
  EXPECT_EQ(r.out, "5\n") << r.err;
  ASSERT_TRUE(ours.check("from_py"));
  EXPECT_EQ(ours.get("from_py"), "hello from torch");
  EXPECT_EQ(ours.add("n", 0), 3);
  run("rm -rf " + dir);
}
