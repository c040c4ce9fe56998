// test_distributed: data-parallel SGD end to end through ./launch — W ranks of batch B equal one
// rank of batch W*B (Gloo and MPI, W in {2,4}), the start-up broadcast makes ranks identical,
// `./train --num-proc` re-launches itself, and the 4-rank job over two ssh "hosts" trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>

#include "tests/error_metrics.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

namespace {

using testutil::run;

std::vector<float> load_params(const std::string& path) {
  std::string b = testutil::read_file(path);
  std::vector<float> v(b.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

using testutil::max_rel_err;

double accuracy_of(const std::string& out) {
  std::smatch m;
  std::regex re(R"(Accuracy: ([0-9.]+)%)");
  return std::regex_search(out, m, re) ? std::stod(m[1]) : -1;
}

class Distributed : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("dist");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
  const std::string train = testutil::train_bin();
  const std::string launch = testutil::launch_bin();
};

// K steps of W ranks with batch B == K steps of one rank with batch W*B over the same samples
// (dropout off; lr scaled by W in both).
void check_equivalence(const std::string& mode, int W, const std::string& dir, const std::string& launch,
                       const std::string& train) {
  const int B = 16, K = 6;
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.2f", 0.01 * W);
  auto single = run(train + " --no-dropout --max-steps " + std::to_string(K) + " --batch-size " +
                        std::to_string(W * B) + " --lr " + lr + " --dump-params " + dir + "/single.bin",
                    300);
  ASSERT_EQ(single.status, 0) << single.err;
  auto multi =
      run(launch + " -np " + std::to_string(W) + " " + mode + " " + train + " --no-dropout --max-steps " +
              std::to_string(K) + " --batch-size " + std::to_string(B) + " --dump-params " + dir + "/multi.%r.bin",
          300);
  ASSERT_EQ(multi.status, 0) << multi.out << multi.err;
  auto s = load_params(dir + "/single.bin");
  auto m0 = load_params(dir + "/multi.0.bin");
  ASSERT_EQ(s.size(), 21840u);
  double diff = max_rel_err(s, m0);
  std::printf("%s W=%d: max rel diff vs one rank of batch %d: %.3g\n", mode.c_str(), W, W * B, diff);
  EXPECT_LT(diff, 1e-5);
  for (int r = 1; r < W; ++r)
    EXPECT_EQ(testutil::read_file(dir + "/multi.0.bin"),
              testutil::read_file(dir + "/multi." + std::to_string(r) + ".bin"))
        << "rank " << r << " diverged from rank 0";
  // Guard: the test can fail — without the averaging (plain lr) the weights differ.
  auto init = run(train + " --max-steps 0 --dump-params " + dir + "/init.bin", 60);
  EXPECT_GT(max_rel_err(load_params(dir + "/init.bin"), m0), 1e-4) << "no training happened";
}

TEST_F(Distributed, GlooTwoRanksEqualOneRankOfDoubleBatch) { check_equivalence("--gloo", 2, dir, launch, train); }
TEST_F(Distributed, GlooFourRanksEqualOneRankOfQuadrupleBatch) { check_equivalence("--gloo", 4, dir, launch, train); }
TEST_F(Distributed, MpiTwoRanksEqualOneRankOfDoubleBatch) { check_equivalence("--mpi", 2, dir, launch, train); }
TEST_F(Distributed, MpiFourRanksEqualOneRankOfQuadrupleBatch) { check_equivalence("--mpi", 4, dir, launch, train); }

TEST_F(Distributed, BroadcastMakesRanksWithDifferentSeedsIdentical) {
  for (std::string mode : {"--gloo", "--mpi"}) {
    auto r = run(launch + " -np 3 " + mode + " sh -c 'exec " + train +
                     " --seed $((${BARESGD_RANK:-$OMPI_COMM_WORLD_RANK} + 1)) --max-steps 0 --dump-params " + dir +
                     "/b.%r.bin'",
                 120);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    auto solo = run(train + " --seed 1 --max-steps 0 --dump-params " + dir + "/seed1.bin", 60);
    auto solo2 = run(train + " --seed 2 --max-steps 0 --dump-params " + dir + "/seed2.bin", 60);
    ASSERT_NE(testutil::read_file(dir + "/seed1.bin"), testutil::read_file(dir + "/seed2.bin"));
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(testutil::read_file(dir + "/b." + std::to_string(k) + ".bin"), testutil::read_file(dir + "/seed1.bin"))
          << mode << " rank " << k << " does not hold rank 0's parameters";
  }
}

TEST_F(Distributed, NumProcRelaunchesThroughLaunch) {
  auto r = run(train + " --num-proc 2 --communication gloo --max-steps 2 --log-interval 1", 120);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[0]<stdout>:Train Epoch: 1 [0/30000 (0%)]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1]<stdout>:Train Epoch: 1 [0/30000 (0%)]"), std::string::npos) << r.out;
}

// Two sshd "hosts" on loopback (tests/test_hosts.sh), shared by the tests below.
class TwoHosts : public TestHostsFixture<> {
 protected:
  void SetUp() override {
    TestHostsFixture::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  }
};

// Every line tagged; ranks 0,1 on hpc01 and 2,3 on hpc03; >= 93% after one epoch.
void check_four_rank_epoch(const testutil::RunResult& r, const std::string& what) {
  ASSERT_EQ(r.status, 0) << what << "\n" << r.out.substr(0, 2000) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::set<std::string> tags;
  std::regex tag_re(R"(^\[(hpc0[13]):([0-3])\]<stdout>:(.*)$)");
  int lines = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, tag_re)) << what << ": untagged line: " << line;
    int rank = std::stoi(m[2]);
    EXPECT_EQ(m[1], rank < 2 ? "hpc01" : "hpc03") << line;
    tags.insert(m[1].str() + ":" + m[2].str());
    ++lines;
  }
  EXPECT_EQ(tags.size(), 4u) << what;
  EXPECT_GT(lines, 4 * 20);
  double acc = accuracy_of(r.out);
  std::printf("%s: 4 ranks on hpc01:2,hpc03:2, 1 epoch: %.2f%% in %.1f s\n", what.c_str(), acc, r.seconds);
  EXPECT_GE(acc, 93.0) << what;
}

TEST_F(TwoHosts, GlooFourRanksOnTwoHostsTrainOneEpoch) {
  auto r = run("BARESGD_SSH_CONFIG=" + cfg() + " " + testutil::launch_bin() +
                   " -np 4 --gloo -H hpc01:2,hpc03:2 --tag-format host " + testutil::train_bin() + " --epochs 1",
               900);
  check_four_rank_epoch(r, "gloo");
}

TEST_F(TwoHosts, MpiFourRanksOnTwoHostsTrainOneEpoch) {
  auto r = run("BARESGD_SSH_CONFIG=" + cfg() + " " + testutil::launch_bin() +
                   " -np 4 --mpi -H hpc01:2,hpc03:2 --tag-format host " + testutil::train_bin() + " --epochs 1",
               900);
  check_four_rank_epoch(r, "mpi");
}

TEST_F(TwoHosts, TheReadmeCommandTagsLikeHorovodrun) {
  // The exact command of the README (ssh config from the environment), short run.
  auto r = run("BARESGD_SSH_CONFIG=" + cfg() + " " + testutil::launch_bin() + " -np 4 --gloo -H hpc01:2,hpc03:2 " +
                   testutil::train_bin() + " --max-steps 1",
               300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (int k = 0; k < 4; ++k)
    EXPECT_NE(r.out.find("[" + std::to_string(k) + "]<stdout>:Train Epoch: 1 [0/15000 (0%)]"), std::string::npos)
        << r.out;
}

}  // namespace
