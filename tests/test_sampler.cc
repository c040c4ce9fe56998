// test_sampler: DistributedSampler semantics (padding with the head, striding by rank, epochs
// reshuffle), DataLoader batch counts, and the normalization of gather_batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include "src/sample_record.h"
#include "src/sampler.h"

namespace {

TEST(Sampler, PermutationIsAPermutationAndDependsOnSeed) {
  auto p = sampler_permutation(1000, 7);
  std::vector<uint32_t> s = p;
  std::sort(s.begin(), s.end());
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(s[i], i);
  EXPECT_EQ(p, sampler_permutation(1000, 7));
  EXPECT_NE(p, sampler_permutation(1000, 8));
}

TEST(Sampler, RanksStrideThePermutation) {
  const size_t n = 60000;
  for (int W : {1, 2, 3, 4, 7}) {
    auto perm = sampler_permutation(n, 0 + 3);
    std::set<uint32_t> seen;
    for (int r = 0; r < W; ++r) {
      DistributedSampler s(n, W, r, true, 0);
      s.set_epoch(3);
      ASSERT_EQ(s.size(), (n + W - 1) / W);
      for (size_t i = 0; i < s.size(); ++i) {
        size_t g = size_t(r) + i * size_t(W);
        ASSERT_EQ(s.indices()[i], perm[g % n]);  // padding repeats the head
        seen.insert(s.indices()[i]);
      }
    }
    EXPECT_EQ(seen.size(), n);
  }
}

TEST(Sampler, PaddingRepeatsHead) {
  // 10 samples over 4 ranks: 12 slots, the last two are perm[0], perm[1].
  auto perm = sampler_permutation(10, 0);
  DistributedSampler r2(10, 4, 2, true, 0), r3(10, 4, 3, true, 0);
  EXPECT_EQ(r2.size(), 3u);
  EXPECT_EQ(r2.indices()[2], perm[0]);  // slot 10
  EXPECT_EQ(r3.indices()[2], perm[1]);  // slot 11
  // More padding than data: 2 samples over 5 ranks.
  DistributedSampler tiny(2, 5, 4, false, 0);
  EXPECT_EQ(tiny.size(), 1u);
  EXPECT_EQ(tiny.indices()[0], 0u);  // slot 4 -> 0,1,0,1,0
}

// An epoch continued at position first = k steps x W ranks x batch on the same world size is the
// rest of the uninterrupted epoch, rank by rank (a same-size resume changes nothing).
TEST(Sampler, ContinuedEpochOnTheSameWorldIsTheRestOfTheEpoch) {
  const size_t n = 1003, batch = 10;
  for (int W : {1, 2, 4}) {
    for (int r = 0; r < W; ++r) {
      DistributedSampler whole(n, W, r, true, 0), rest(n, W, r, true, 0);
      whole.set_epoch(2);
      rest.set_epoch(2, 3 * batch * size_t(W));
      ASSERT_EQ(rest.size(), whole.size() - 3 * batch);
      EXPECT_TRUE(std::equal(rest.indices().begin(), rest.indices().end(), whole.indices().begin() + 3 * batch));
      EXPECT_EQ(rest.padding(), whole.padding());
    }
  }
}

// 4 ranks took 3 batches of 10 (positions 0..119 of the epoch); the epoch goes on with 2, 3 or 5
// ranks: every sample of the epoch is seen exactly once when the rest divides by the new world,
// and only padding() samples twice when it does not.
TEST(Sampler, EpochContinuedOnAnotherWorldSeesEverySampleOnce) {
  const size_t n = 1200, done = 3 * 10 * 4;
  for (int W : {2, 3, 5, 7}) {
    std::vector<int> seen(n, 0);
    for (int r = 0; r < 4; ++r) {
      DistributedSampler before(n, 4, r, true, 0);
      before.set_epoch(5);
      for (size_t i = 0; i < 30; ++i) ++seen[before.indices()[i]];
    }
    size_t padding = 0;
    for (int r = 0; r < W; ++r) {
      DistributedSampler after(n, W, r, true, 0);
      after.set_epoch(5, done);
      padding = after.padding();
      for (uint32_t idx : after.indices()) ++seen[idx];
    }
    EXPECT_EQ(padding, (W - (n - done) % W) % W) << W;
    size_t twice = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_GE(seen[i], 1) << "sample " << i << " skipped with " << W << " ranks";
      ASSERT_LE(seen[i], 2);
      twice += seen[i] == 2;
    }
    EXPECT_EQ(twice, padding) << W;
  }
}

TEST(Sampler, EpochContinuedPastItsEndIsEmpty) {
  DistributedSampler s(100, 2, 1, true, 0);
  s.set_epoch(1, 100);
  EXPECT_EQ(s.size(), 0u);
  s.set_epoch(1, 500);
  EXPECT_EQ(s.size(), 0u);
}

TEST(Sampler, EpochReshuffles) {
  DistributedSampler s(100, 1, 0, true, 0);
  s.set_epoch(1);
  auto a = s.indices();
  s.set_epoch(2);
  EXPECT_NE(a, s.indices());
  DistributedSampler plain(5, 1, 0, false, 0);
  EXPECT_EQ(plain.indices(), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

TEST(Sampler, LoaderKeepsLastPartialBatch) {
  EXPECT_EQ(num_batches(15000, 64), 235u);  // the last has 15000 - 234*64 = 24
  EXPECT_EQ(num_batches(60000, 64), 938u);
  EXPECT_EQ(num_batches(64, 64), 1u);
}

TEST(Sampler, GatherNormalizesLikeTorchvision) {
  uint8_t px[2 * 784] = {};
  px[0] = 255;
  px[784 + 1] = 128;
  uint8_t labels[2] = {3, 9};
  MnistSplit split;
  split.pixels = px;
  split.labels = labels;
  split.count = 2;
  split.rows = split.cols = 28;
  float x[2 * 784];
  int32_t y[2];
  uint32_t idx[2] = {1, 0};
  gather_batch(x, y, split, idx, 2);
  EXPECT_EQ(y[0], 9);
  EXPECT_EQ(y[1], 3);
  EXPECT_FLOAT_EQ(x[1], (128.0f / 255.0f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(x[784], (1.0f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(x[785], -0.1307f / 0.3081f);
}

}  // namespace

// --sample-record: one line per step and rank with that rank's batch; reopened for a resume at
// step S it keeps only the lines of the steps before S (the rest is redone).
TEST(SampleRecord, LinesPerStepAndRankAndAResumeDropsTheRedoneSteps) {
  char tmpl[] = "/tmp/baresgd-sample-record-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/rec";
  {
    SampleRecord rec(path, 0);
    rec.begin_epoch(10, 2, 1, 0);
    for (uint64_t step = 0; step < 3; ++step) rec.record_step(step, 1, step, 2);
  }
  auto perm = sampler_permutation(10, 1);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "0 1 0 " + std::to_string(perm[0]) + " " + std::to_string(perm[2]));
  EXPECT_EQ(lines[5], "2 1 1 " + std::to_string(perm[9]));  // the last batch: one sample
  EXPECT_EQ(sample_record_step(lines[4]), 2);
  EXPECT_EQ(sample_record_step("x 1 0"), -1);
  {
    SampleRecord again(path, 1);  // resumed at step 1: steps 1 and 2 are redone
  }
  std::ifstream kept(path);
  std::string all((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, lines[0] + "\n" + lines[1] + "\n");
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}
