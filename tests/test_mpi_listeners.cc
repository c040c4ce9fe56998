// test_mpi_listeners: which sockets an `./launch --mpi --network-interface lo` job listens on
// (MpiListeners), read from /proc as anyone can (tests/proc_listeners.h). No rank may listen on the wildcard address
// (0.0.0.0 or ::): a one-host job runs Open MPI's self,vader BTLs, which open no socket. mpirun's
// own out-of-band listener cannot be pinned in Open MPI 4.1.4 (docs/deploy.md, "Open MPI's
// listening sockets"): it is allowed one wildcard socket per family and no more, and they are
// printed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fault_harness.h"
#include "tests/proc_listeners.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

using proclisteners::tcp_listeners_of;
using proclisteners::TcpListener;

class MpiListeners : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    marker_ = unique_marker();
    dir_ = "/tmp/baresgd-" + marker_;
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_;
  }
  void TearDown() override {
    kill_procs_with(marker_);
    std::system(("rm -rf '" + dir_ + "'").c_str());
    EXPECT_GE(wait_no_procs(marker_, 30), 0) << "processes survived teardown";
  }
  std::string marker_, dir_;
};

TEST_F(MpiListeners, NoRankListensOnTheWildcardAddressAndMpirunOnlyOnItsOutOfBandPort) {
  const std::string data = dir_ + "/data";
  link_real_mnist(data);
  // Without the harness's OMPI_MCA_btl=self,tcp (a user's value wins over the launcher's): the
  // launcher's own choice for one host is under test.
  Proc job({"/usr/bin/env", "-u", "OMPI_MCA_btl", abs_path(testutil::launch_bin()), "-np", "2", "--mpi",
            "--network-interface", "lo", abs_path(testutil::train_bin()), "--epochs", "1", "--log-interval", "10",
            "--data-dir", data});
  // Both ranks train: past MPI_Init (where the BTLs open their listeners) and the first allreduce.
  for (int r = 0; r < 2; ++r) {
    std::regex line("\\[" + std::to_string(r) + "\\]<stdout>:Train Epoch: 1 \\[");
    ASSERT_GE(job.wait_for(line, 180, false, Clock::now()), 0) << job.out() << job.err();
  }
  int ranks = 0, mpiruns = 0;
  for (pid_t p : procs_with(marker_)) {
    const std::string comm = read_file("/proc/" + std::to_string(p) + "/comm");
    const bool is_rank =
        contains(read_file("/proc/" + std::to_string(p) + "/environ"), std::string(1, '\0') + "OMPI_COMM_WORLD_RANK=");
    const bool is_mpirun = comm == "mpirun\n";
    if (!is_rank && !is_mpirun) continue;
    ranks += is_rank;
    mpiruns += is_mpirun;
    int wild4 = 0, wild6 = 0;
    for (const TcpListener& l : tcp_listeners_of(p)) {
      std::cerr << "[ sample ] " << (is_rank ? "rank" : "mpirun") << " pid " << p << " listens on " << l.shown()
                << "\n";
      if (is_rank) {
        EXPECT_TRUE(l.loopback()) << "rank pid " << p << " listens on " << l.shown();
      }
      wild4 += !l.v6 && l.wildcard();
      wild6 += l.v6 && l.wildcard();
      if (!l.wildcard()) {
        EXPECT_TRUE(l.loopback()) << "pid " << p << " listens on " << l.shown();
      }
    }
    if (is_mpirun) {  // its out-of-band channel: one wildcard socket per family (docs/deploy.md)
      EXPECT_LE(wild4, 1) << "mpirun pid " << p;
      EXPECT_LE(wild6, 1) << "mpirun pid " << p;
    }
  }
  EXPECT_EQ(ranks, 2);
  EXPECT_EQ(mpiruns, 1);
  EXPECT_EQ(job.code(300), 0) << job.err();
  EXPECT_GE(wait_no_procs(marker_, 30), 0) << "left running after the launcher exited";
}

}  // namespace
