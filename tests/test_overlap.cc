// test_overlap: the overlapped gradient averaging (--overlap on, comm/overlapped_averaging.h) gives
// the same parameters, bit for bit, as the whole-buffer path (--overlap off) after N steps: Gloo and
// MPI at 2 ranks, with fp16, with --gradient-predivide-factor, with Adasum (which keeps the whole
// buffer), Gloo at 4 ranks and with 2 compute threads, and one rank. Each run's BARESGD_TIMING line
// says how many buckets ran, so a run that silently fell back to the whole buffer cannot pass.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "comm/overlapped_averaging.h"
#include "src/net.h"
#include "src/options.h"
#include "tests/dumped_runs.h"
#include "tests/test_util.h"

namespace {

using testutil::run;

// Net's layers in backward order, as src/gradient_exchange.cc hands them to the overlapped averaging.
std::vector<Segment> net_backward_layers() {
  std::vector<Segment> layers;
  for (int layer = Net::kNumLayers - 1; layer >= 0; --layer)
    layers.push_back(
        {Net::kParams[2 * layer].offset, Net::kParams[2 * layer].count + Net::kParams[2 * layer + 1].count});
  return layers;
}

TEST(OverlapBuckets, NetBucketsAreFc2WithFc1ThenConv2ThenConv1) {
  for (size_t elem : {size_t(4), size_t(2)}) {
    const auto b = plan_buckets(net_backward_layers(), elem);
    ASSERT_EQ(b.size(), 3u) << "elem " << elem;
    EXPECT_EQ(b[0].offset, 5280u);  // fc1.weight .. fc2.bias
    EXPECT_EQ(b[0].count, 21840u - 5280u);
    EXPECT_EQ(b[0].after_layer, 1);  // after fc1's backward (fc2's 2 KB waits for it)
    EXPECT_EQ(b[1].offset, 260u);    // conv2
    EXPECT_EQ(b[1].count, 5020u);
    EXPECT_EQ(b[1].after_layer, 2);
    EXPECT_EQ(b[2].offset, 0u);  // conv1, the last layer's backward: nothing left to overlap
    EXPECT_EQ(b[2].count, 260u);
    EXPECT_EQ(b[2].after_layer, 3);
    EXPECT_EQ(b[0].first_layer, 0);  // the layers each holds: fc2..fc1, conv2, conv1
    EXPECT_EQ(b[1].first_layer, 2);
    EXPECT_EQ(b[2].first_layer, 3);
  }
}

TEST(OverlapBuckets, ALayerThatIsNotAdjacentClosesTheBucket) {
  // [30,40) then [0,10): not adjacent, so two buckets although both are below min_bytes.
  const auto b = plan_buckets({{30, 10}, {0, 10}}, 4, 1000);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].offset, 30u);
  EXPECT_EQ(b[0].after_layer, 0);
  EXPECT_EQ(b[1].offset, 0u);
  EXPECT_EQ(b[1].after_layer, 1);
  EXPECT_EQ(b[1].first_layer, 1);
  // Adjacent and small: one bucket, started after the last layer.
  const auto one = plan_buckets({{20, 10}, {10, 10}, {0, 10}}, 4, 1000);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].offset, 0u);
  EXPECT_EQ(one[0].count, 30u);
  EXPECT_EQ(one[0].after_layer, 2);
  EXPECT_EQ(one[0].first_layer, 0);
  EXPECT_TRUE(plan_buckets({}, 4).empty());
}

class OverlapTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("overlap");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }

  // Runs `prefix ./train --max-steps N args --overlap on|off`, each rank dumping its parameters, and
  // expects bit-equal files for every rank, `buckets` buckets with on and none with off, and
  // parameters that moved from the initial ones.
  void expect_same_bits(const std::string& prefix, int world, const std::string& args, int buckets) {
    const std::string steps = " --max-steps 12 ";
    for (const char* o : {"on", "off"}) {
      auto r = run("BARESGD_TIMING=1 " + prefix + train + steps + args + " --overlap " + o + " --dump-params " + dir +
                       "/" + o + ".%r.bin",
                   300);
      ASSERT_EQ(r.status, 0) << prefix << args << " --overlap " << o << "\n" << r.out << r.err;
      const std::set<long> want = {std::string(o) == "on" ? buckets : 0};
      EXPECT_EQ(testutil::timing_values(r.err, "overlap_buckets"), want) << "--overlap " << o << ": " << r.err;
    }
    testutil::expect_same_dumped_params(dir, "on", "off", world,
                                        "--overlap on and off trained to different parameters (" + args + ")");
    // Guard: the comparison can fail — the trained parameters are not the initial ones.
    auto init = run(train + " --max-steps 0 --dump-params " + dir + "/init.bin", 60);
    ASSERT_EQ(init.status, 0) << init.err;
    EXPECT_FALSE(testutil::read_file(dir + "/init.bin") == testutil::read_file(dir + "/on.0.bin")) << "nothing trained";
  }
  void gloo(const std::string& args, int buckets = 3, int world = 2) {
    expect_same_bits(launch + " -np " + std::to_string(world) + " --gloo ", world, args, buckets);
  }
  void mpi(const std::string& args, int buckets = 3) { expect_same_bits(launch + " -np 2 --mpi ", 2, args, buckets); }

  std::string dir;
  const std::string train = testutil::train_bin();
  const std::string launch = testutil::launch_bin();
};

TEST_F(OverlapTrain, GlooTwoRanks) { gloo(""); }
TEST_F(OverlapTrain, GlooTwoRanksFp16) { gloo("--fp16-allreduce"); }
TEST_F(OverlapTrain, GlooTwoRanksPredivide) { gloo("--gradient-predivide-factor 3"); }
TEST_F(OverlapTrain, GlooTwoRanksFp16Predivide) { gloo("--fp16-allreduce --gradient-predivide-factor 3"); }
// Adasum keeps the whole buffer (comm/overlapped_averaging.h says why): no buckets, the same bits.
TEST_F(OverlapTrain, GlooTwoRanksAdasumKeepsTheWholeBuffer) { gloo("--use-adasum", 0); }
TEST_F(OverlapTrain, GlooTwoRanksAdasumFp16KeepsTheWholeBuffer) { gloo("--use-adasum --fp16-allreduce", 0); }
// Two compute threads per rank: the buckets start after the slices' sum, the bits stay.
TEST_F(OverlapTrain, GlooTwoRanksTwoThreads) { gloo("--threads 2"); }
// Gloo's allreduce of 4 ranks is its direct exchange, summed in rank order, like the buckets.
TEST_F(OverlapTrain, GlooFourRanks) { gloo("", 3, 4); }
TEST_F(OverlapTrain, GlooFourRanksFp16) { gloo("--fp16-allreduce", 3, 4); }
// An explicit --allreduce keeps its algorithm over the whole buffer.
TEST_F(OverlapTrain, GlooRingKeepsTheWholeBuffer) { gloo("--allreduce ring", 0); }
TEST_F(OverlapTrain, MpiTwoRanks) { mpi(""); }
TEST_F(OverlapTrain, MpiTwoRanksFp16) { mpi("--fp16-allreduce"); }
TEST_F(OverlapTrain, MpiTwoRanksPredivide) { mpi("--gradient-predivide-factor 3"); }
TEST_F(OverlapTrain, MpiTwoRanksAdasumKeepsTheWholeBuffer) { mpi("--use-adasum", 0); }
// One rank exchanges nothing: no buckets, the same bits.
TEST_F(OverlapTrain, OneRank) { expect_same_bits("", 1, "", 0); }

TEST(OverlapOptions, OffByDefaultOnAndOffParse) {
  EXPECT_FALSE(parse_options({}).overlap);
  EXPECT_TRUE(parse_options({"--overlap", "on"}).overlap);
  EXPECT_TRUE(parse_options({"--overlap=on"}).overlap);
  EXPECT_FALSE(parse_options({"--overlap", "on", "--overlap", "off"}).overlap);
}

TEST(OverlapOptions, BadValueIsOneLineNamingTheFlag) {
  auto r = run(testutil::train_bin() + " --overlap maybe", 30);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--overlap: invalid choice: 'maybe' (choose from 'on', 'off')"), std::string::npos) << r.err;
}

}  // namespace
