// test_gloo_sync_lane: Gloo's sync lane (comm/gloo_sync_lane.h), where the rank's own thread moves
// the gradient. Its room rule (which regions may open on it), and ./train on the lane against the
// device thread's path (BARESGD_GLOO_SYNC_LANE=0): bit-equal parameters after 12 steps on 2 and 4
// ranks, fp32 and fp16, whole buffer and overlapped buckets, and the lane_rounds count of the
// BARESGD_TIMING line saying which path ran (so a lane that silently stayed shut cannot pass).
// And the spin-or-sleep choice of a waiting rank (comm/spin_choice.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "comm/spin_choice.h"
#include "tests/dumped_runs.h"
#include "tests/test_util.h"

namespace {

// Rounds until a sleeping choice spins again.
int rounds_asleep(SpinChoice* c) {
  int n = 0;
  while (!c->spinning()) {
    c->after_round(false);
    ++n;
  }
  return n;
}

TEST(SpinChoice, NeverSpinsWhenTheRankHasNoCpuOfItsOwn) {
  SpinChoice c(false);
  EXPECT_FALSE(c.spinning());
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(c.after_round(i % 2 == 0));
  EXPECT_FALSE(c.spinning());
}

TEST(SpinChoice, APreemptedSpinSleepsForABackoffThatDoublesUpToItsCap) {
  SpinChoice c(true);
  EXPECT_TRUE(c.spinning());
  EXPECT_FALSE(c.after_round(false));  // a clean round changes nothing
  int want = SpinChoice::kFirstBackoff;
  for (int k = 0; k < 12; ++k) {
    EXPECT_TRUE(c.after_round(true));  // preempted while spinning: sleep
    EXPECT_FALSE(c.spinning());
    EXPECT_EQ(rounds_asleep(&c), want) << "preemption " << k;
    want = std::min(want * 2, SpinChoice::kMaxBackoff);
  }
}

TEST(SpinChoice, ALongCleanRunBringsTheBackoffBack) {
  SpinChoice c(true);
  for (int k = 0; k < 4; ++k) {  // backoff grows to 16 * 2^4
    c.after_round(true);
    rounds_asleep(&c);
  }
  for (int i = 0; i < SpinChoice::kCleanRoundsToReset; ++i) c.after_round(false);
  c.after_round(true);
  EXPECT_EQ(rounds_asleep(&c), SpinChoice::kFirstBackoff);
}

}  // namespace

#if BARESGD_HAVE_GLOO
#include "comm/gloo_sync_lane.h"

namespace {

using testutil::run;

constexpr size_t kDebianWmemMax = 212992, kDebianRmemDefault = 131072;

TEST(GlooSyncLaneRoom, TheGradientAndItsBucketsFitOnDebiansDefaults) {
  EXPECT_TRUE(GlooSyncLane::fits(87360, 87360, kDebianWmemMax, kDebianRmemDefault));  // fp32 gradient
  EXPECT_TRUE(GlooSyncLane::fits(43680, 43680, kDebianWmemMax, kDebianRmemDefault));  // fp16
  // The overlap buckets, written before any is read: fc2+fc1, conv2, conv1.
  EXPECT_TRUE(GlooSyncLane::fits(66240 + 20080 + 1040, 66240, kDebianWmemMax, kDebianRmemDefault));
}

TEST(GlooSyncLaneRoom, WhatCouldWaitForThePeersReadsStaysOff) {
  // Many small messages: the send buffer stays small, only the receive window is sure.
  EXPECT_FALSE(GlooSyncLane::fits(200000, 4096, kDebianWmemMax, kDebianRmemDefault));
  EXPECT_TRUE(GlooSyncLane::fits(65536 + 4096, 4096, kDebianWmemMax, kDebianRmemDefault));
  // One large message: the send buffer is capped by wmem_max.
  EXPECT_FALSE(GlooSyncLane::fits(1 << 20, 1 << 20, kDebianWmemMax, kDebianRmemDefault));
  EXPECT_TRUE(GlooSyncLane::fits(1 << 20, 1 << 20, 4 << 20, kDebianRmemDefault));
  // A host with small socket buffers takes the gradient off the lane.
  EXPECT_FALSE(GlooSyncLane::fits(87360, 87360, 16384, 8192));
}

class GlooSyncLaneTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("lane");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }

  // `world` Gloo ranks, 12 steps, on the lane and off it: every rank's parameters bit-equal, the
  // lane's run with `rounds` lane rounds on every rank, the other with none.
  void expect_same_bits(int world, const std::string& args, long rounds) {
    for (const char* lane : {"1", "0"}) {
      auto r = run("BARESGD_TIMING=1 BARESGD_GLOO_SYNC_LANE=" + std::string(lane) + " " + launch + " -np " +
                       std::to_string(world) + " --gloo " + train + " --max-steps 12 " + args + " --dump-params " +
                       dir + "/lane" + lane + ".%r.bin",
                   300);
      ASSERT_EQ(r.status, 0) << "lane " << lane << " " << args << "\n" << r.out << r.err;
      const std::set<long> want = {std::string(lane) == "1" ? rounds : 0};
      EXPECT_EQ(testutil::timing_values(r.err, "lane_rounds"), want)
          << "BARESGD_GLOO_SYNC_LANE=" << lane << ": " << r.err;
    }
    testutil::expect_same_dumped_params(
        dir, "lane1", "lane0", world,
        "the sync lane and the device thread's path trained to different parameters (" + args + ")");
  }

  std::string dir;
  const std::string train = testutil::train_bin();
  const std::string launch = testutil::launch_bin();
};

// 12 steps, one gradient exchange each; with --overlap on, three buckets each.
TEST_F(GlooSyncLaneTrain, TwoRanksWholeBuffer) { expect_same_bits(2, "", 12); }
TEST_F(GlooSyncLaneTrain, TwoRanksFp16) { expect_same_bits(2, "--fp16-allreduce", 12); }
TEST_F(GlooSyncLaneTrain, TwoRanksOverlapped) { expect_same_bits(2, "--overlap on", 36); }
TEST_F(GlooSyncLaneTrain, FourRanksWholeBufferAndPredivide) {
  expect_same_bits(4, "--gradient-predivide-factor 3", 12);
}
TEST_F(GlooSyncLaneTrain, FourRanksOverlappedFp16) { expect_same_bits(4, "--overlap on --fp16-allreduce", 36); }

}  // namespace

#endif  // BARESGD_HAVE_GLOO
