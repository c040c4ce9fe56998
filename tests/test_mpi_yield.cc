// test_mpi_yield: MPI ranks that outnumber their host's CPUs ask Open MPI to yield when idle
// (issue 25 case 5: 4 MPI ranks on 2 cores took 18.3 s an epoch under srun, 1.68 s yielding).
// The rank's own decision (src/mpi_yield.h, made before MPI_Init under any starter), ./launch
// --mpi's (it sets the variable for mpirun and says so), and both end to end on a CPU mask of one
// CPU (taskset), so the ranks are oversubscribed on any machine.
#include <gtest/gtest.h>
#include <sched.h>

#include <string>

#include "src/mpi_yield.h"
#include "tests/comm_test_util.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

using testutil::launch_bin;
using testutil::RunResult;
using testutil::train_bin;

int count_of(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
  return n;
}

// The first CPU this process may run on: the ranks are pinned to it alone.
std::string one_cpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) return std::to_string(c);
  return "0";
}

TEST(MpiYield, OnlyWhenTheHostsRanksOutnumberItsCpus) {
  MpiYield y = decide_mpi_yield(4, 0, 2, nullptr);
  EXPECT_TRUE(y.set);
  EXPECT_EQ(y.line,
            "4 ranks on this host's 2 CPUs: Open MPI yields when idle (OMPI_MCA_mpi_yield_when_idle=1, set "
            "before MPI_Init)");
  EXPECT_TRUE(decide_mpi_yield(4, 3, 2, nullptr).set);     // every rank sets it,
  EXPECT_EQ(decide_mpi_yield(4, 3, 2, nullptr).line, "");  // local rank 0 alone says so
  EXPECT_EQ(decide_mpi_yield(2, 0, 1, nullptr).line.find("2 ranks on this host's 1 CPU:"), 0u);
  EXPECT_FALSE(decide_mpi_yield(2, 0, 2, nullptr).set);  // a CPU each: busy-polling is Open MPI's best
  EXPECT_FALSE(decide_mpi_yield(1, 0, 1, nullptr).set);
  for (const char* user : {"0", "1", ""}) {  // the user's value, whatever it is, stays; nothing said
    EXPECT_FALSE(decide_mpi_yield(8, 0, 2, user).set) << user;
    EXPECT_EQ(decide_mpi_yield(8, 0, 2, user).line, "") << user;
  }
}

// Issue 25 case 5 through ./launch: `./launch -np 4 --mpi` on one CPU says so in one line and its
// ranks see OMPI_MCA_mpi_yield_when_idle=1 (mpirun's -H localhost:4 slots hide the
// oversubscription from Open MPI, which would busy-poll); the ranks, seeing it set, say nothing.
TEST(MpiYield, LaunchSaysItAndItsRanksYield) {
  if (commtest::find_in_path("mpirun").empty()) BARESGD_SKIP("mpirun is not installed");
#if !BARESGD_HAVE_MPI
  BARESGD_SKIP("built without MPI");
#else
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  RunResult r = testutil::run("taskset -c " + one_cpu() + " " + launch_bin() +
                                  " -np 4 --mpi sh -c 'echo yield=$OMPI_MCA_mpi_yield_when_idle; exec " + train_bin() +
                                  " --max-steps 2'",
                              300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err,
                     "launch: 4 ranks on this machine's 1 CPU: Open MPI yields when idle "
                     "(OMPI_MCA_mpi_yield_when_idle=1); times include waiting for a CPU (descheduled_s in "
                     "--metrics, marked in ./report)\n"),
            1)
      << r.err;
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(count_of(r.out, "[" + std::to_string(rank) + "]<stdout>:yield=1\n"), 1) << r.out;
  EXPECT_EQ(r.err.find("ranks on this host's"), std::string::npos) << r.err;
  // The user's own value wins, and then nothing is said.
  RunResult u = testutil::run("OMPI_MCA_mpi_yield_when_idle=0 taskset -c " + one_cpu() + " " + launch_bin() +
                                  " -np 2 --mpi sh -c 'echo yield=$OMPI_MCA_mpi_yield_when_idle'",
                              120);
  ASSERT_EQ(u.status, 0) << u.err;
  EXPECT_EQ(count_of(u.out, "<stdout>:yield=0\n"), 2) << u.out;
  EXPECT_EQ(u.err.find("yields when idle"), std::string::npos) << u.err;
#endif
}

// Under plain mpirun (as under srun) nobody tells the ranks: each asks Open MPI itself before
// MPI_Init, and local rank 0 says so once.
TEST(MpiYield, RanksOfPlainMpirunAskOpenMpiThemselves) {
  const std::string mpirun = commtest::find_in_path("mpirun");
  if (mpirun.empty()) BARESGD_SKIP("mpirun is not installed");
#if !BARESGD_HAVE_MPI
  BARESGD_SKIP("built without MPI");
#else
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string start =
      "taskset -c " + one_cpu() + " " + mpirun + " --allow-run-as-root -np 2 -H localhost:2 --bind-to none ";
  RunResult r = testutil::run(start + train_bin() + " --max-steps 2", 300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err,
                     "train: 2 ranks on this host's 1 CPU: Open MPI yields when idle "
                     "(OMPI_MCA_mpi_yield_when_idle=1, set before MPI_Init); times include waiting for a CPU "
                     "(descheduled_s in --metrics, marked in ./report)\n"),
            1)
      << r.err;
  RunResult u = testutil::run(start + "-x OMPI_MCA_mpi_yield_when_idle=0 " + train_bin() + " --max-steps 2", 300);
  ASSERT_EQ(u.status, 0) << u.err;
  EXPECT_EQ(u.err.find("yields when idle"), std::string::npos) << u.err;
#endif
}

}  // namespace
