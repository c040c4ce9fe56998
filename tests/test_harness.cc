// test_harness: the suite's own process helper (testutil::spawn, under run_processes, run,
// faultharness::Proc and the ./launch tests' Launch): a child leads its own process group, gets
// its stdin from /dev/null, its output where asked and exactly the environment given; a program
// that cannot be executed is one line and exit 127; a deadline kills the child's whole group.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/test_util.h"

namespace {

using testutil::run_processes;

TEST(TestHarness, ChildGetsExactlyItsEnvironmentItsOwnGroupAndNoStdin) {
  testutil::RunAll r = run_processes(
      {{{"/bin/sh", "-c", "echo \"$ONLY|$HOME\"; cut -d' ' -f5 /proc/$$/stat; echo $$; cat; echo end"}, {"ONLY=this"}}},
      30);
  ASSERT_EQ(r.procs[0].status, 0) << r.describe();
  const std::string out = r.procs[0].out;
  EXPECT_EQ(out.substr(0, out.find('\n')), "this|") << out;
  // The group id equals the shell's pid: it leads its own group.
  const size_t a = out.find('\n') + 1, b = out.find('\n', a), c = out.find('\n', b + 1);
  EXPECT_EQ(out.substr(a, b - a), out.substr(b + 1, c - b - 1)) << out;
  EXPECT_EQ(out.substr(c + 1), "end\n") << "stdin is /dev/null: cat ends at once";
}

TEST(TestHarness, AProgramThatCannotRunIsOneLineAndStatus127) {
  testutil::RunAll r = run_processes({{{"/nonexistent/prog"}, {}}}, 30);
  EXPECT_EQ(r.procs[0].status, 127);
  EXPECT_EQ(r.procs[0].err, "exec /nonexistent/prog: No such file or directory\n");
}

TEST(TestHarness, TheDeadlineKillsTheWholeGroup) {
  const std::string dir = testutil::make_temp_dir("harness"), marker = dir + "/pid";
  testutil::RunAll r = run_processes({{{"/bin/sh", "-c", "sleep 60 & echo $! > " + marker + "; wait"}, {}}}, 1);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.procs[0].status, -1);
  const std::string pid = testutil::read_file(marker);
  ASSERT_FALSE(pid.empty());
  // The background sleep (same group) is gone too: at most a zombie until init reaps it.
  const long sleeper = std::atol(pid.c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  char state = testutil::process_state(sleeper);
  while (state != 0 && state != 'Z' && std::chrono::steady_clock::now() < deadline) {
    ::usleep(10 * 1000);
    state = testutil::process_state(sleeper);
  }
  EXPECT_TRUE(state == 0 || state == 'Z') << "the group's background sleep is in state " << state;
  testutil::run("rm -rf '" + dir + "'", 10);
}

}  // namespace
