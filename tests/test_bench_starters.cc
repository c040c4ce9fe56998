// test_bench_starters: `make bench-starters` (bench/starters.sh) still prints its table: one round
// of ./launch local trains and makes an ok row with the final accuracy and the same-line check
// under the table; a run that fails is a "failed (exit N: first error line)" row and the bench
// goes on to the next starter; an unknown starter name is refused in one line with exit 2.
// The starters that need the sshd hosts, the Slurm cluster or torchrun are exercised by their own
// suites; this checks the bench's own machinery, not its timings.
// Env: BARESGD_SRC (the source tree; make test sets it), its ./train, ./launch and data/MNIST.
#include <gtest/gtest.h>

#include <string>

#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

using testutil::RunResult;

std::string src() { return testutil::env_or("BARESGD_SRC", "."); }

RunResult bench(const std::string& env, const std::string& out) {
  return testutil::run("cd '" + src() + "' && " + env + " BENCH_OUT='" + out + "' bash bench/starters.sh", 300);
}

TEST(BenchStarters, OneRoundOfLaunchLocalPrintsAnOkRow) {
  if (!testutil::have_mnist(src() + "/data")) BARESGD_SKIP("needs data/MNIST (make data)");
  const std::string out = testutil::make_temp_dir("bench-starters");
  RunResult r = bench("BENCH_STARTER_ROUNDS=1 BENCH_STARTERS=launch-local", out);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("| launch-local | ok | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Every ok run (1 runs of 1 starters) printed the same final line: `Test set: Average loss: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("- launch-local: `./launch -np 2 --gloo --network-interface lo "), std::string::npos) << r.out;
  EXPECT_NE(testutil::read_file(out + "/1/launch-local/err").find("timing: rank=1 "), std::string::npos);
  testutil::run("rm -rf '" + out + "'");
}

// Every rank refuses a flag: each starter's row says how it failed, in its own words, and the
// bench still goes on to the next starter and prints the table with exit 0.
TEST(BenchStarters, FailedRunIsAFailedRowAndTheBenchGoesOn) {
  const std::string out = testutil::make_temp_dir("bench-starters-failed");
  RunResult r =
      bench("BENCH_STARTER_ROUNDS=1 BENCH_STARTER_TRAIN_ARGS=--bogus BENCH_STARTERS='launch-local mpirun'", out);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // Whichever rank's line came first: the two ranks fail at once.
  const bool rank0 = r.out.find(
                         "| launch-local | failed (exit 2: [0]<stderr>:train: error: unrecognized argument: "
                         "--bogus) | - |") != std::string::npos;
  const bool rank1 = r.out.find(
                         "| launch-local | failed (exit 2: [1]<stderr>:train: error: unrecognized argument: "
                         "--bogus) | - |") != std::string::npos;
  EXPECT_TRUE(rank0 || rank1) << r.out;
  EXPECT_NE(r.out.find("| mpirun | failed (exit 2: train: error: unrecognized argument: --bogus) | - |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("No starter ran to the end"), std::string::npos) << r.out;
  testutil::run("rm -rf '" + out + "'");
}

TEST(BenchStarters, UnknownStarterIsRefusedInOneLine) {
  RunResult r = bench("BENCH_STARTERS='launch-local slurm'", "/nonexistent/never-written");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "bench-starters: error: BENCH_STARTERS: unknown starter 'slurm' (known: launch-local launch-ssh launch-mpi "
            "srun-gloo srun-pmix sbatch salloc-launch mpirun torchrun-static torchrun-standalone torchrun-c10d)\n");
  EXPECT_EQ(r.out, "");
}

}  // namespace
