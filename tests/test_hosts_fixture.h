// test_hosts_fixture: the sshd test hosts of tests/test_hosts.sh (hpc01 on 127.0.0.11, hpc03 on
// 127.0.0.13; hpc02 is in the ssh config with nothing listening) for a GoogleTest suite: started
// once under a temporary directory before the suite's first test, stopped through their pid
// files (test_hosts.sh stop) after its last, the directory then removed. A test of a suite whose
// hosts did not start fails, printing the script's output. TestHostsFixture<Base> puts this under
// any fixture Base (its SetUp runs after the check).
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/test_util.h"

namespace testhosts {

struct State {
  std::string dir;  // empty: not started
  bool up = false;
  std::string why;  // the start's output when it failed
};
inline State& state() {
  static State s;
  return s;
}
inline std::string dir() { return state().dir; }
inline std::string ssh_config() { return state().dir + "/ssh_config"; }

// (Re)starts the hosts in the suite's directory (test_hosts.sh start is idempotent).
inline bool start_in_place() {
  testutil::RunResult r = testutil::run("bash tests/test_hosts.sh start " + state().dir + " 2>&1", 120);
  state().up = r.status == 0;
  if (!state().up) state().why = r.out;
  return state().up;
}

inline void start() {
  state() = State{};
  state().dir = testutil::make_temp_dir("test-hosts");
  if (!start_in_place()) std::fprintf(stderr, "test hosts failed to start: %s\n", state().why.c_str());
}

inline void stop() {
  if (state().dir.empty()) return;
  testutil::RunResult r = testutil::run("bash tests/test_hosts.sh stop " + state().dir + " 2>&1", 60);
  if (r.status != 0) std::fprintf(stderr, "test_hosts.sh stop failed: %s\n", r.out.c_str());
  testutil::run("rm -rf '" + state().dir + "'", 60);
  state() = State{};
}

}  // namespace testhosts

template <class Base = ::testing::Test>
class TestHostsFixture : public Base {
 public:
  static void SetUpTestSuite() { testhosts::start(); }
  static void TearDownTestSuite() { testhosts::stop(); }
  static std::string hosts_dir() { return testhosts::dir(); }
  static std::string cfg() { return testhosts::ssh_config(); }

 protected:
  void SetUp() override {
    ASSERT_TRUE(testhosts::state().up) << "test hosts did not start (tests/test_hosts.sh start): "
                                       << testhosts::state().why;
    Base::SetUp();
  }
};
