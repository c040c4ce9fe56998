// test_install: `make install` / `make uninstall` into a DESTDIR (stripped binaries, man pages,
// --version, the installed baresgd-train finding baresgd-launch, nothing left after uninstall), the
// data directory's lookup order and message, the start-up CPU check, and the installed programs
// in a minimal Debian root (debootstrap --variant=minbase bookworm + .ci/install-deps's runtime
// set only).
// Env: BARESGD_SRC (the source tree; make test sets it), MNIST in data/.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "src/cpu_check.h"
#include "src/data_dir.h"
#include "src/version.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

using testutil::run;

std::string src_dir() { return testutil::env_or("BARESGD_SRC", "."); }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// make install/uninstall in the source tree, without the outer make's flags and jobserver. What is
// installed is the optimized build even when the suite itself is the sanitized one (.ci/sanitize.sh
// runs `make SANITIZE=1 test`, and make hands command-line variables to its recipes' environment):
// a sanitized binary needs libasan, which no runtime package of the minimal image provides.
testutil::RunResult make_target(const std::string& target, const std::string& destdir,
                                const std::string& prefix = "/usr/local") {
  return run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u LDFLAGS make -s -C '" + src_dir() + "' " + target +
                 " PREFIX=" + prefix + " DESTDIR='" + destdir + "'",
             600);
}

std::string files_under(const std::string& dir) { return run("find '" + dir + "' -type f | sort").out; }

const char* const kPrograms[] = {"train", "launch", "report"};

TEST(InstallDestdir, InstallsStrippedProgramsManPagesAndUninstallsAll) {
  const std::string d = testutil::make_temp_dir("install");
  auto r = make_target("install", d);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string bin = d + "/usr/local/bin/", man = d + "/usr/local/share/man/man1/";
  for (const char* p : kPrograms) {
    const std::string exe = bin + "baresgd-" + p;
    ASSERT_EQ(access(exe.c_str(), X_OK), 0) << exe;
    auto f = run("file -b '" + exe + "'");
    EXPECT_TRUE(has(f.out, ", stripped")) << f.out;
    EXPECT_EQ(run("readelf -S '" + exe + "' | grep -c '\\.debug_'").out, "0\n") << exe;
    auto v = run("'" + exe + "' --version");
    EXPECT_EQ(v.status, 0);
    EXPECT_EQ(v.out.substr(0, v.out.find('\n')), std::string("baresgd-") + p + " " + kBaresgdVersion);
    EXPECT_EQ(has(v.out, "\nbackends: "), std::string(p) != "report") << v.out;  // report links none
    // The page written in man/, with the version put in; ManPages.* check its contents.
    const std::string page_file = man + "baresgd-" + p + ".1";
    std::string page = testutil::read_file(page_file);
    EXPECT_TRUE(has(page, ".TH BARESGD-")) << p;
    EXPECT_TRUE(has(page, "\"baresgd " + std::string(kBaresgdVersion) + "\"")) << p;
    EXPECT_FALSE(has(page, "@VERSION@")) << p;
    EXPECT_FALSE(has(page, "help2man")) << p;
    auto shown = run("LC_ALL=C MANWIDTH=200 man -l '" + page_file + "'");
    EXPECT_TRUE(has(shown.out, "\nSYNOPSIS\n       baresgd-" + std::string(p))) << shown.out.substr(0, 400);
  }
  EXPECT_TRUE(
      has(testutil::read_file(d + "/usr/local/share/baresgd/install-manifest"), "/usr/local/bin/baresgd-train\n"));
  r = make_target("uninstall", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(files_under(d), "");
  run("rm -rf '" + d + "'");
}

// The installed baresgd-train re-launches itself through the baresgd-launch beside it.
TEST(InstallDestdir, InstalledTrainFindsInstalledLauncher) {
  ASSERT_TRUE(testutil::have_mnist(src_dir() + "/data")) << "run `make data` first";
  const std::string d = testutil::make_temp_dir("install-np");
  ASSERT_EQ(make_target("install", d, "/opt/bsgd").status, 0);
  auto r = run("cd / && '" + d +
                   "/opt/bsgd/bin/baresgd-train' --num-proc 2 --epochs 1 --max-steps 2 "
                   "--log-interval 1 --data-dir '" +
                   src_dir() + "/data'",
               300);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "[0]<stdout>:Train Epoch: 1 [0/30000")) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "[1]<stdout>:")) << r.out;
  make_target("uninstall", d, "/opt/bsgd");
  EXPECT_EQ(files_under(d), "");
  run("rm -rf '" + d + "'");
}

TEST(InstallDataDir, FlagThenEnvThenDefault) {
  EXPECT_EQ(choose_data_dir(true, "/f", "/e").dir, "/f");
  EXPECT_EQ(choose_data_dir(true, "/f", "/e").source, "--data-dir");
  EXPECT_EQ(choose_data_dir(false, "./data", "/e").dir, "/e");
  EXPECT_EQ(choose_data_dir(false, "./data", "/e").source, "$BARESGD_DATA_DIR");
  EXPECT_EQ(choose_data_dir(false, "./data", "").dir, "./data");
  EXPECT_EQ(choose_data_dir(false, "./data", nullptr).source, "the default");
}

TEST(InstallDataDir, MessagesNameTheOrderAndHowToFetch) {
  DataDirChoice c{"/e", "$BARESGD_DATA_DIR"};
  std::string tree = missing_data_message(c, "train-images-idx3-ubyte", "/e/MNIST/raw", "/e", false);
  EXPECT_TRUE(has(tree, "MNIST train-images-idx3-ubyte[.gz] not found in /e/MNIST/raw/ or /e/ (run `make data`"));
  EXPECT_TRUE(has(tree, "--data-dir, else $BARESGD_DATA_DIR, else ./data; here from $BARESGD_DATA_DIR"));
  std::string inst = missing_data_message(c, "train-images-idx3-ubyte", "/e/MNIST/raw", "/e", true);
  EXPECT_FALSE(has(inst, "make data")) << inst;
  EXPECT_TRUE(has(inst, "/e/MNIST/raw/ or /e/")) << inst;
  EXPECT_TRUE(has(inst, "set BARESGD_DATA_DIR=DIR")) << inst;
}

// End to end: the environment variable is used when --data-dir is absent, and the flag wins.
TEST(InstallDataDir, TrainReadsEnvAndFlagWins) {
  auto r = run("cd / && BARESGD_DATA_DIR=/nonexistent/env '" + testutil::train_bin() + "' --epochs 1", 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "/nonexistent/env/MNIST/raw/ or /nonexistent/env/")) << r.err;
  EXPECT_TRUE(has(r.err, "here from $BARESGD_DATA_DIR")) << r.err;
  r = run("cd / && BARESGD_DATA_DIR=/nonexistent/env '" + testutil::train_bin() +
              "' --data-dir /nonexistent/flag --epochs 1",
          60);
  EXPECT_TRUE(has(r.err, "/nonexistent/flag/MNIST/raw/")) << r.err;
  EXPECT_FALSE(has(r.err, "/nonexistent/env")) << r.err;
  r = run("cd / && env -u BARESGD_DATA_DIR '" + testutil::train_bin() + "' --epochs 1", 60);
  EXPECT_TRUE(has(r.err, "./data/MNIST/raw/ or ./data/")) << r.err;
  EXPECT_TRUE(has(r.err, "here the default ./data")) << r.err;
}

TEST(InstallCpuCheck, NamesWhatTheCpuLacks) {
  auto missing = missing_cpu_features("AVX AVX2 FMA", [](const std::string& f) { return f == "AVX"; });
  ASSERT_EQ(missing, (std::vector<std::string>{"AVX2", "FMA"}));
  EXPECT_EQ(cpu_lacks_message("train", missing, "-march=x86-64-v3"),
            "train: this CPU lacks AVX2 and FMA, which this build needs (built with "
            "-march=x86-64-v3); rebuild with make OPT=-O3");
  EXPECT_EQ(cpu_lacks_message("t", {"A", "B", "C"}, "-march=x"),
            "t: this CPU lacks A, B and C, which this build needs (built with -march=x); rebuild with make OPT=-O3");
  EXPECT_TRUE(missing_cpu_features("", [](const std::string&) { return false; }).empty());
  // This machine runs the suite, so it has what this build needs.
  EXPECT_TRUE(missing_cpu_features("SSE3 SSE4_2 POPCNT", cpu_has_feature).empty());
}

// ---- the minimal image -------------------------------------------------------------------
// .ci/install-deps's runtime set, the one list of what a machine needs to run baresgd: the
// packages of what the binaries link and start (InstallDeps.* check it against ldd); apt brings
// their dependencies. docs/deploy.md and the README list the same packages.
std::string runtime_packages() {
  auto r = run("bash '" + src_dir() + "/.ci/install-deps' --list runtime");
  std::string words;
  for (char c : r.out) words += c == '\n' ? ' ' : c;
  return r.status == 0 ? words : "";
}

class InstallMinimalImage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (getuid() != 0) BARESGD_SKIP("needs root (debootstrap, chroot, mount)");
    const std::string packages = runtime_packages();
    ASSERT_NE(packages, "") << ".ci/install-deps --list runtime printed nothing";
    auto r = run("bash '" + src_dir() + "/tests/minimal_root.sh' " + packages, 1500);
    if (r.status == 3) BARESGD_SKIP(r.err);
    ASSERT_EQ(r.status, 0) << r.err;
    root_ = r.out.substr(0, r.out.find('\n'));
    stage_ = testutil::make_temp_dir("install-image");
    ASSERT_EQ(make_target("install", stage_).status, 0);
    ASSERT_EQ(run("cp -a '" + stage_ + "/.' '" + root_ + "/'").status, 0);
    installed_ = true;
    data_ = "/tmp/baresgd-data-" + std::to_string(getpid());
    ASSERT_EQ(run("mkdir -p '" + root_ + data_ + "/MNIST' && cp -r '" + src_dir() + "/data/MNIST/raw' '" + root_ +
                  data_ + "/MNIST/'")
                  .status,
              0);
    ASSERT_EQ(mount("proc", (root_ + "/proc").c_str(), "proc", 0, nullptr), 0);
    proc_mounted_ = true;
    ASSERT_EQ(mount("/dev", (root_ + "/dev").c_str(), nullptr, MS_BIND, nullptr), 0);
    dev_mounted_ = true;
  }
  void TearDown() override {
    if (dev_mounted_) umount2((root_ + "/dev").c_str(), MNT_DETACH);
    if (proc_mounted_) umount2((root_ + "/proc").c_str(), MNT_DETACH);
    if (!data_.empty()) run("rm -rf '" + root_ + data_ + "'");
    if (installed_) make_target("uninstall", root_);
    if (!stage_.empty()) run("rm -rf '" + stage_ + "'");
  }
  testutil::RunResult in_root(const std::string& cmd, double timeout_s) {
    return run("chroot '" + root_ +
                   "' /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp "
                   "OMPI_MCA_btl=self,tcp /bin/sh -c 'cd " +
                   data_ + " && " + cmd + "'",
               timeout_s);
  }
  std::string root_, stage_, data_;
  bool installed_ = false, proc_mounted_ = false, dev_mounted_ = false;
};

TEST_F(InstallMinimalImage, TrainsAndLaunchesTwoRanksInTheRoot) {
  ASSERT_TRUE(testutil::have_mnist(src_dir() + "/data")) << "run `make data` first";
  auto r = in_root("BARESGD_DATA_DIR=. baresgd-train --epochs 1", 900);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "Test set: Average loss:")) << r.out << r.err;
  r = in_root("baresgd-launch -np 2 --gloo baresgd-train --epochs 1 --max-steps 20 --data-dir .", 600);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "[0]<stdout>:Train Epoch: 1")) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "[1]<stdout>:")) << r.out;
  // --mpi: the runtime set's mpirun starts the ranks (as root, so --allow-run-as-root).
  r = in_root(
      "OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo baresgd-launch -np 2 --mpi "
      "baresgd-train --epochs 1 --max-steps 4 --data-dir .",
      600);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "[1]<stdout>:Train Epoch: 1")) << r.out << r.err;
  // ssh hosts: the runtime set's ssh gives the host's address (--dry-run runs only ssh -G).
  r = in_root(
      "echo Host hpc01 > ssh_config && echo HostName 127.0.0.11 >> ssh_config && "
      "baresgd-launch --dry-run -F ssh_config -np 2 --gloo -H hpc01:2 baresgd-train",
      60);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "127.0.0.11")) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "ssh -o BatchMode=yes")) << r.out << r.err;
  auto size = run("du -sm --exclude=./proc --exclude=./dev '" + root_ + "' | cut -f1");
  std::printf("minimal root: %s MiB (%s)\n", size.out.substr(0, size.out.find('\n')).c_str(), root_.c_str());
  std::fflush(stdout);  // before TearDown forks
}

}  // namespace
