// test_c10d_store: the c10d TCPStore client (comm/c10d_store_client) against PyTorch's real
// TCPStore (Debian's python3-torch, test-only) and against a store that never answers.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "comm/c10d_store_client.h"
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
