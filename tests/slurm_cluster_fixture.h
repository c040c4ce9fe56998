// slurm_cluster_fixture: a GoogleTest fixture over the one-machine Slurm cluster that
// tests/slurm_cluster.sh starts (munged, slurmctld, slurmd) under a temporary directory for the
// suite and stops through its pid files. Commands run with the cluster's environment (DIR/env:
// SLURM_CONF and BARESGD_MUNGE_SOCKET). Tests skip, with the script's reason, only when the
// daemons cannot start, or without MNIST.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/skip_policy.h"
#include "tests/test_util.h"

class SlurmClusterFixture : public ::testing::Test {  // helpers public: free functions of a test file use them
 public:
  static std::string src_dir() { return testutil::env_or("BARESGD_SRC", "."); }
  static std::string data_dir() { return src_dir() + "/data"; }
  static std::string train_cmd() { return testutil::train_bin() + " --data-dir " + data_dir(); }

  static void SetUpTestSuite() {
    dir() = testutil::make_temp_dir("slurm_cluster");
    testutil::RunResult r = testutil::run("bash " + src_dir() + "/tests/slurm_cluster.sh start " + dir() + " 2>&1", 90);
    started() = r.status == 0;
    if (!started()) why() = r.out;
  }
  // Stops the cluster and shows what stop said (a slurmstepd it had to stop is named there).
  static void TearDownTestSuite() {
    testutil::RunResult r = testutil::run("bash " + src_dir() + "/tests/slurm_cluster.sh stop " + dir() + " 2>&1", 60);
    if (!r.out.empty()) std::printf("%s", r.out.c_str());
    EXPECT_EQ(r.status, 0) << "tests/slurm_cluster.sh stop failed: " << r.out;
  }
  void SetUp() override {
    if (!started()) BARESGD_SKIP("Slurm test cluster did not start: " << why());
    if (!testutil::have_mnist(data_dir())) BARESGD_SKIP("no MNIST in " << data_dir() << " (make data)");
  }
  // cmd with the cluster's environment.
  static testutil::RunResult slurm(const std::string& cmd, double timeout_s = 120) {
    return testutil::run("set -a; . " + dir() + "/env; set +a; " + cmd, timeout_s);
  }
  // True when /proc/pid names a live (not zombie) process.
  static bool pid_alive(int pid) {
    const char state = testutil::process_state(pid);
    return state != 0 && state != 'Z';
  }
  static std::string& dir() {
    static std::string d;
    return d;
  }
  static bool& started() {
    static bool s = false;
    return s;
  }
  static std::string& why() {
    static std::string w;
    return w;
  }
};
