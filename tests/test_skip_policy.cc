// test_skip_policy: the suite cannot pass under CI while tests skip (tests/skip_policy.h). Each test
// runs this very binary again on one probe or one real fixture, with CI=true or without, and reads
// its exit code and output: an unlisted skip fails, a listed one passes, a bare GTEST_SKIP fails the
// run at its end, and the Slurm cluster, the namespace hosts and the minimal install image each fail
// under CI, with the component's own error, when their component cannot start (a bad path).
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

using testutil::run;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// This binary run again on the tests `filter` selects, with `env` (VAR=value ...) in front.
testutil::RunResult rerun(const std::string& env, const std::string& filter, double timeout_s = 300) {
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  EXPECT_GT(n, 0);
  return run("env " + env + " '" + std::string(self) + "' --gtest_also_run_disabled_tests --gtest_filter='" + filter +
                 "' 2>&1",
             timeout_s);
}

const char kUnlisted[] = "a reason no allowlist lists";

}  // namespace

// The probes: disabled, so they run only when a test above asks for them by name.
TEST(SkipPolicyProbe, DISABLED_SkipsWithAnUnlistedReason) { BARESGD_SKIP(kUnlisted); }
TEST(SkipPolicyProbe, DISABLED_SkipsWithAListedReason) { BARESGD_SKIP("a listed " << 1 << " reason"); }
TEST(SkipPolicyProbe, DISABLED_SkipsBare) { GTEST_SKIP() << kUnlisted; }  // the one bare skip in tests/

TEST(SkipPolicy, AllowlistEntriesMatchWholeReasonsAndNeedAWhy) {
  const std::string list = "# comment | not an entry\nmpirun is absent | CI has no mpirun\nno why here | \n";
  EXPECT_TRUE(testutil::skip_reason_listed("mpirun is absent", list));
  EXPECT_TRUE(testutil::skip_reason_listed("  mpirun is absent ", list));
  EXPECT_FALSE(testutil::skip_reason_listed("mpirun is absent here", list));
  EXPECT_FALSE(testutil::skip_reason_listed("mpirun", list));
  EXPECT_FALSE(testutil::skip_reason_listed("no why here", list));
  EXPECT_FALSE(testutil::skip_reason_listed("# comment", list));
  EXPECT_FALSE(testutil::skip_reason_listed("", list));
}

TEST(SkipPolicy, TheRepositorysAllowlistHasAWhyForEveryEntry) {
  const std::string text = testutil::read_file(testutil::env_or("BARESGD_SRC", ".") + "/tests/skip_allowlist.txt");
  ASSERT_FALSE(text.empty());
  int entries = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (line.empty() || line[0] == '#') continue;
    ++entries;
    const size_t bar = line.find(" | ");
    ASSERT_NE(bar, std::string::npos) << "entry without \" | WHY\": " << line;
    EXPECT_GT(line.size() - bar - 3, 40u) << "say why the component cannot run on a CI machine: " << line;
    EXPECT_TRUE(testutil::skip_reason_listed(line.substr(0, bar), text)) << line;
  }
  EXPECT_GE(entries, 1);
}

TEST(SkipPolicy, AnUnlistedSkipFailsUnderCiAndSkipsOutsideIt) {
  auto ci = rerun("CI=true", "SkipPolicyProbe.DISABLED_SkipsWithAnUnlistedReason");
  EXPECT_NE(ci.status, 0) << ci.out;
  EXPECT_TRUE(has(ci.out, "skipped under CI, and the reason is not on ")) << ci.out;
  EXPECT_TRUE(has(ci.out, kUnlisted)) << ci.out;
  EXPECT_TRUE(has(ci.out, "0 passed, 1 failed, 0 skipped")) << ci.out;
  auto outside = rerun("-u CI", "SkipPolicyProbe.DISABLED_SkipsWithAnUnlistedReason");
  EXPECT_EQ(outside.status, 0) << outside.out;
  EXPECT_TRUE(has(outside.out, "[  SKIPPED ] SkipPolicyProbe.DISABLED_SkipsWithAnUnlistedReason")) << outside.out;
  EXPECT_TRUE(has(outside.out, "0 passed, 0 failed, 1 skipped")) << outside.out;
}

TEST(SkipPolicy, AListedSkipPassesUnderCi) {
  const std::string dir = testutil::make_temp_dir("skip_policy");
  testutil::write_file(dir + "/allow.txt", "a listed 1 reason | the probe's component cannot run on a CI machine\n");
  auto ci = rerun("CI=true BARESGD_SKIP_ALLOWLIST=" + dir + "/allow.txt", "SkipPolicyProbe.DISABLED_SkipsWithAListedReason");
  EXPECT_EQ(ci.status, 0) << ci.out;
  EXPECT_TRUE(has(ci.out, "0 passed, 0 failed, 1 skipped")) << ci.out;
  run("rm -rf '" + dir + "'");
}

TEST(SkipPolicy, ABareGtestSkipFailsTheRunUnderCi) {
  auto ci = rerun("CI=true", "SkipPolicyProbe.DISABLED_SkipsBare");
  EXPECT_EQ(ci.status, 1) << ci.out;
  EXPECT_TRUE(has(ci.out, "skip refused under CI (not on ")) << ci.out;
  EXPECT_TRUE(has(ci.out, "SkipPolicyProbe.DISABLED_SkipsBare: " + std::string(kUnlisted))) << ci.out;
  auto outside = rerun("-u CI", "SkipPolicyProbe.DISABLED_SkipsBare");
  EXPECT_EQ(outside.status, 0) << outside.out;
}

// Every other skip in tests/ goes through BARESGD_SKIP: no other file streams into a bare skip.
TEST(SkipPolicy, NoTestSkipsAroundThePolicy) {
  const std::string src = testutil::env_or("BARESGD_SRC", ".");
  const std::string bare = std::string("GTEST_") + "SKIP() <<";  // spelt so, this line is no match
  auto r = run("cd '" + src + "' && grep -lF '" + bare + "' tests/*.cc tests/*.h tests/fuzz/*.cc", 30);
  EXPECT_EQ(r.out, "tests/test_skip_policy.cc\ntests/skip_policy.h\n") << r.out;
  auto count = run("cd '" + src + "' && grep -cF '" + bare + "' tests/test_skip_policy.cc", 30);
  EXPECT_EQ(count.out, "1\n") << "the bare-skip probe is the only one";
}

// A component that cannot start fails its suite under CI, and the output carries the component's
// own words. The bad paths: a PATH without the Slurm daemons, a tap-link tool that is not there, a
// debootstrap that is not there.
TEST(SkipPolicy, ASlurmClusterThatCannotStartFailsUnderCi) {
  auto ci = rerun("CI=true PATH=/nonexistent/slurm/bin:/usr/bin:/bin", "SlurmCluster.SbatchBatchStepIsWorldSizeOneWithNotice");
  EXPECT_NE(ci.status, 0) << ci.out;
  EXPECT_TRUE(has(ci.out, "Slurm test cluster did not start: slurm_cluster.sh: slurmctld or munged not installed"))
      << ci.out;
  EXPECT_TRUE(has(ci.out, "0 passed, 1 failed, 0 skipped")) << ci.out;
}

TEST(SkipPolicy, NamespaceHostsThatCannotStartFailUnderCi) {
  auto ci = rerun("CI=true BARESGD_TOOLS=/nonexistent/tools", "NetnsHosts.TheLinkIsTheOnlyRoute");
  EXPECT_NE(ci.status, 0) << ci.out;
  EXPECT_TRUE(has(ci.out, "0 passed, 1 failed, 0 skipped")) << ci.out;
  if (::geteuid() == 0)
    EXPECT_TRUE(has(ci.out, "netns_hosts.sh: /nonexistent/tools/tool_tap_link not found (run: make test-build)"))
        << ci.out;
}

TEST(SkipPolicy, AnInstallImageThatCannotBuildFailsUnderCi) {
  auto ci = rerun("CI=true BARESGD_DEBOOTSTRAP=/nonexistent/debootstrap", "InstallMinimalImage.*");
  EXPECT_NE(ci.status, 0) << ci.out;
  EXPECT_TRUE(has(ci.out, " failed, 0 skipped")) << ci.out;
  EXPECT_FALSE(has(ci.out, " 0 failed")) << ci.out;
  if (::geteuid() == 0)
    EXPECT_TRUE(has(ci.out, "minimal_root: /nonexistent/debootstrap is not installed")) << ci.out;
}
