// test_install_deps: .ci/install-deps installs sets (runtime, build, test; all by default), and
// its runtime set is exactly what the programs need on a compute node: the Debian packages of
// the libraries they link and of the programs they start (tests/runtime_packages.sh derives them
// from readelf, ldd and dpkg on this machine). The README's Deploy lane and docs/deploy.md list
// the same set. Only --list is run here: nothing is installed.
// Env: BARESGD_SRC, BARESGD_TRAIN, BARESGD_LAUNCH, BARESGD_REPORT (make test). Optimized pass only:
// a sanitized binary also links libasan.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "tests/test_util.h"

namespace {

using testutil::run;
using Packages = std::set<std::string>;

std::string src_dir() { return testutil::env_or("BARESGD_SRC", "."); }

Packages words(const std::string& text) {
  Packages out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::string joined(const Packages& p) {
  std::string out;
  for (const std::string& s : p) out += (out.empty() ? "" : " ") + s;
  return out;
}

Packages minus(const Packages& a, const Packages& b) {
  Packages out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

testutil::RunResult list(const std::string& sets) {
  return run("bash '" + src_dir() + "/.ci/install-deps' --list " + sets);
}

Packages listed(const std::string& sets) {
  auto r = list(sets);
  EXPECT_EQ(r.status, 0) << sets << ": " << r.err;
  return words(r.out);
}

TEST(InstallDeps, ListsEachSet) {
  const Packages runtime = listed("runtime"), build = listed("build"), test = listed("test");
  EXPECT_TRUE(runtime.count("libmunge2")) << joined(runtime);
  EXPECT_TRUE(runtime.count("openssh-client")) << joined(runtime);
  for (const char* heavy : {"python3-torch", "chromium", "slurm-wlm", "clang", "g++", "libgtest-dev", "munge"})
    EXPECT_FALSE(runtime.count(heavy)) << heavy << " is not needed to run baresgd: " << joined(runtime);
  for (const char* p : {"g++", "make", "libgloo-dev", "libopenmpi-dev", "libmunge-dev", "libopenblas-dev"})
    EXPECT_TRUE(build.count(p)) << p << ": " << joined(build);
  for (const char* p :
       {"python3-torch", "chromium", "slurm-wlm", "munge", "clang", "googletest", "debootstrap", "man-db"})
    EXPECT_TRUE(test.count(p)) << p << ": " << joined(test);
  EXPECT_FALSE(test.count("help2man")) << "the man pages are written by hand now";
  // No set is the union of all three, as `all` is.
  Packages every = runtime;
  every.insert(build.begin(), build.end());
  every.insert(test.begin(), test.end());
  EXPECT_EQ(listed(""), every);
  EXPECT_EQ(listed("all"), every);
  Packages runtime_and_build = runtime;
  runtime_and_build.insert(build.begin(), build.end());
  EXPECT_EQ(listed("runtime build"), runtime_and_build);
  auto bad = list("compute");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "install-deps: unknown set 'compute' (choose from runtime, build, test, all)\n");
  EXPECT_EQ(bad.out, "");
}

// The runtime set is exactly the packages of what the three programs link (readelf -d NEEDED,
// resolved by ldd, owned per dpkg -S) and of the programs they start (ssh, mpirun).
TEST(InstallDeps, RuntimeSetIsWhatTheProgramsLinkAndStart) {
  auto d = run("bash '" + src_dir() + "/tests/runtime_packages.sh' '" + testutil::train_bin() + "' '" +
               testutil::launch_bin() + "' '" + testutil::env_or("BARESGD_REPORT", "./report") + "'");
  ASSERT_EQ(d.status, 0) << d.err;
  const Packages needed = words(d.out), runtime = listed("runtime");
  EXPECT_TRUE(needed.count("libmunge2")) << d.out;
  EXPECT_EQ(joined(minus(needed, runtime)), "") << "needed at run time but not in install-deps' runtime set";
  EXPECT_EQ(joined(minus(runtime, needed)), "") << "in install-deps' runtime set but nothing links or starts it";
}

// The line of a page that installs the runtime packages, as its words.
Packages apt_line_of(const std::string& page, const std::string& marker) {
  const std::string text = testutil::read_file(src_dir() + "/" + page);
  const size_t at = text.find(marker);
  if (at == std::string::npos) return {};
  const size_t start = at + marker.size();
  return words(text.substr(start, text.find_first_of("`\n", start) - start));
}

TEST(InstallDeps, DeployDocsListTheRuntimeSet) {
  const Packages runtime = listed("runtime");
  EXPECT_EQ(joined(apt_line_of("docs/deploy.md", "sudo apt-get install --no-install-recommends ")), joined(runtime))
      << "docs/deploy.md's Runtime packages section";
  EXPECT_EQ(joined(apt_line_of("README.md", "Debian 12: `")), joined(runtime)) << "README.md's Deploy lane";
}

}  // namespace
