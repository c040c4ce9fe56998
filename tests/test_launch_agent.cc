// test_launch_agent: `launch --agent` driven directly, as ssh carries it for a remote rank: the
// request, the pid line, control bytes and forwarded signals, exit status, environment, errors.
#include <gtest/gtest.h>

#include "tests/launch_harness.h"

using namespace launchharness;  // NOLINT: the harness is these files' vocabulary

// ============================================================================================
// Integration: `launch --agent` driven directly (what ssh carries for a remote rank)
// ============================================================================================

class LaunchAgent : public LaunchLocal {
 protected:
  std::string request(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                      int blas_local_size = 0) {
    AgentRequest r;
    r.nonce = "testnonce";
    r.env = env;
    r.argv = argv;
    r.openblas_local_size = blas_local_size;
    return encode_agent_request(r);
  }
};

TEST_F(LaunchAgent, EofOnStdinStopsTheRankFamily) {
  Launch a({"--agent"}, {}, true);
  a.write_stdin(request({rank_tool(), "family", "120", marker_}));
  ASSERT_TRUE(a.wait_out("ready", 1, 30)) << a.err();
  ASSERT_TRUE(a.wait_out("@@BSGD-AGENT testnonce pid ", 1, 30, true)) << a.err();
  ASSERT_TRUE(wait_procs(marker_, 3, 30)) << "the rank's family (rank, child, grandchild) did not fork";
  auto t0 = Clock::now();
  a.close_stdin();  // the launcher died / the ssh session was lost
  // The family sleeps 120 s: only the agent's stop ends it before code()'s deadline.
  EXPECT_EQ(a.code(30), 143) << a.err();
  std::cerr << "[ timing ] EOF on the agent's stdin -> agent exit in " << secs_since(t0) << " s\n";
  EXPECT_TRUE(contains(a.err(), "@@BSGD-AGENT testnonce signal 15\n")) << a.err();
  EXPECT_GE(wait_no_procs(marker_, 30), 0);
  // The pid line comes first, before any output of the rank.
  EXPECT_EQ(a.err().rfind("@@BSGD-AGENT testnonce pid ", 0), 0u) << a.err();
}

TEST_F(LaunchAgent, ControlBytesAndForwardedSignals) {
  Launch a({"--agent"}, {}, true);
  a.write_stdin(request({rank_tool(), "family", "120", marker_}));
  ASSERT_TRUE(a.wait_out("ready", 1, 30)) << a.err();
  a.write_stdin("I");  // SIGINT to the rank's group
  EXPECT_EQ(a.code(30), 130) << a.err();
  EXPECT_TRUE(contains(a.err(), "@@BSGD-AGENT testnonce signal 2\n")) << a.err();
  EXPECT_GE(wait_no_procs(marker_, 30), 0);

  Launch b({"--agent"}, {}, true);
  b.write_stdin(request({rank_tool(), "sleep", "120", marker_}));
  ASSERT_TRUE(b.wait_out("ready", 1, 30)) << b.err();
  kill(b.pid(), SIGTERM);  // forwarded
  EXPECT_EQ(b.code(30), 143) << b.err();
  EXPECT_GE(wait_no_procs(marker_, 30), 0);

  Launch c({"--agent"}, {}, true);
  c.write_stdin(request({rank_tool(), "ignore-term", "120", marker_}));
  ASSERT_TRUE(c.wait_out("ready", 1, 30)) << c.err();
  ASSERT_EQ(c.out().rfind("ready ", 0), 0u) << c.out();  // the agent passes the rank's output untagged
  const pid_t rank = static_cast<pid_t>(std::atol(c.out().c_str() + 6));
  c.write_stdin("T");
  ASSERT_TRUE(c.wait_out("ignored SIGTERM", 1, 30)) << c.out() << c.err();  // the rank got it...
  const char state = testutil::process_state(rank);
  EXPECT_TRUE(state != 0 && state != 'Z') << "state " << state;  // ...and lives on
  c.write_stdin("K");
  EXPECT_EQ(c.code(30), 137) << c.err();
}

TEST_F(LaunchAgent, ExitStatusEnvironmentAndErrors) {
  Launch a({"--agent"}, {}, true);
  a.write_stdin(request({"sh", "-c", "echo $FOO $OPENBLAS_NUM_THREADS; exit 7"}, {"FOO=bar baz"}, 2));
  EXPECT_EQ(a.code(30), 7) << a.err();
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  EXPECT_EQ(a.out(), "bar baz " + std::to_string(std::max(1L, cores / 2)) + "\n");
  EXPECT_TRUE(contains(a.err(), "@@BSGD-AGENT testnonce exit 7\n")) << a.err();

  Launch bad({"--agent"}, {}, true);
  bad.write_stdin("GET / HTTP/1.0\r\n\r\n");
  bad.close_stdin();
  EXPECT_EQ(bad.code(30), 2);
  EXPECT_TRUE(contains(bad.err(), "launch --agent:")) << bad.err();

  Launch missing({"--agent"}, {}, true);
  missing.write_stdin(request({"no-such-program-" + marker_}));
  EXPECT_EQ(missing.code(30), 127);
  EXPECT_TRUE(contains(missing.err(), "cannot run")) << missing.err();
  EXPECT_TRUE(contains(missing.err(), "@@BSGD-AGENT testnonce exit 127")) << missing.err();
}

TEST_F(LaunchAgent, KillNineOfAgentTakesTheRankFamilyDown) {
  Launch a({"--agent"}, {}, true);
  a.write_stdin(request({rank_tool(), "family", "120", marker_}));
  ASSERT_TRUE(a.wait_out("ready", 1, 30)) << a.err();
  ASSERT_TRUE(wait_procs(marker_, 3, 30)) << "the rank's family (rank, child, grandchild) did not fork";
  kill(a.pid(), SIGKILL);
  a.wait(10);
  EXPECT_GE(wait_no_procs(marker_, 30), 0) << "the rank's processes outlived their agent";
}
