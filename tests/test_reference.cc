// test_reference: ./reference (src/reference.cc: the learner's trainer, plain-loop kernels and a
// ring allreduce written out) is the same algorithm as ./train. From the same seed, 20 steps at
// W = 1, 2 and 3 give the same parameters after every step, up to float summation order (the
// bound below), and the same loss lines; an epoch of a subset gives the same test-set line;
// ./launch --mpi gives the Gloo run's lines and parameters exactly; a bad flag is one line, exit 2.
//
// The tolerance. Both programs compute every value of a step from the same numbers in the same
// operations; what differs is the ORDER of the additions in the long sums (./train's fused SIMD
// kernels add in float, 16 samples per vector, in another order; the naive kernels add in double
// and round once; at W = 3 the ring adds the ranks' gradients in another order than Gloo). So for
// parameter i after step K (p_k its value after step k, Dp_k = p_k - p_(k-1) the reference's update):
//
//   |p_ref,K - p_train,K| <= 2 * sum over k = 1..K of ( ulp(p_k) + rho * |Dp_k| )
//
//   ulp(p_k): each program rounds p - lr * v to float once a step, each within half an ulp, so the
//     two can land one ulp apart even from equal updates (the least nonzero difference there is).
//   rho * |Dp_k|: the update itself comes from sums in another order. A float sum of T terms in
//     any order is within gamma_T * sum |terms| of the exact sum (gamma_T = T u / (1 - T u),
//     u = 2^-24; Higham, Accuracy and Stability of Numerical Algorithms, 4.2); the longest sums of a
//     step are conv1's weight gradients, T = 64 * 24 * 24 = 36,864, so rho = gamma_T = 2.2e-3,
//     taken relative to the update (where the terms cancel a lot the update is small and the ulp
//     term carries the bound). The allreduce adds W - 1 <= 2 more additions: negligible next to T.
//   2 *: the per-step count leaves out how an earlier difference changes later gradients (it
//     goes through lr * the loss's curvature, small over 20 steps); the factor is headroom for it.
// Measured (20 steps, seed 42): the largest absolute difference is 1.5e-8 (W = 1), 1.6e-8 (W = 2),
// 1.5e-8 (W = 3), about one ulp of a parameter near 0.17; the largest share of the bound used is
// 0.48, 0.33, 0.30, each at step 1, where a single one-ulp rounding flip meets a bound of 2 ulps.
// Guard: comparing the reference's step k with ./train's step k - 1 (one step off) exceeds the
// bound 96 to 117 times at every k, so the bound tells a step from the next. (Over a whole epoch
// the propagation is no longer small: the losses part in the third decimal by its end, which is
// why the comparison is of the first 20 steps.)
//
// Loss lines: the loss is the mean of 64 float log-probabilities, which differ between the
// programs by rounding order (about 1e-7); printed to 6 decimals the two agree unless a rounding
// boundary falls between them, and then print one unit apart in the last digit: the text must be
// equal up to the loss, and the losses at most 1e-6 apart (at W = 1 all 20 lines are equal here).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace {

using testutil::run;

constexpr int kSteps = 20;
constexpr size_t kNumParams = 21840;

std::vector<float> floats_of(const std::string& path) {
  const std::string b = testutil::read_file(path);
  std::vector<float> v(b.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

// "" for one process, else ./launch over W ranks.
std::string on_ranks(int world, const std::string& mode = "--gloo") {
  return world == 1 ? "" : testutil::launch_bin() + " -np " + std::to_string(world) + " " + mode + " ";
}

// Rank r's lines of stdout: one process's stdout as it is, or ./launch's "[r]<stdout>:" lines.
std::vector<std::string> rank_lines(const std::string& out, int world, int r) {
  const std::string tag = "[" + std::to_string(r) + "]<stdout>:";
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (world == 1) lines.push_back(line);
    if (world > 1 && line.rfind(tag, 0) == 0) lines.push_back(line.substr(tag.size()));
  }
  return lines;
}

// The lines of the two programs are the same text, except that the number after `key` (the
// loss) may differ by at most max_units units of its last printed digit. Returns how many did.
int expect_same_up_to_last_digit(const std::vector<std::string>& ref, const std::vector<std::string>& train,
                                 const std::string& key, int max_units, const std::string& what) {
  EXPECT_EQ(ref.size(), train.size()) << what;
  int differ = 0;
  for (size_t i = 0; i < std::min(ref.size(), train.size()); ++i) {
    const size_t at = ref[i].find(key);
    if (at == std::string::npos || train[i].rfind(key, at) != at) {
      EXPECT_EQ(ref[i], train[i]) << what;
      continue;
    }
    EXPECT_EQ(ref[i].substr(0, at), train[i].substr(0, at)) << what;
    const std::string a = ref[i].substr(at + key.size()), b = train[i].substr(at + key.size());
    const size_t dot = a.find('.'), end = a.find_first_not_of("0123456789", dot + 1);
    const double unit = std::pow(10.0, -double((end == std::string::npos ? a.size() : end) - dot - 1));
    const double d = std::fabs(std::stod(a) - std::stod(b)) / unit;
    EXPECT_LE(d, max_units + 1e-6) << what << ": " << ref[i] << " vs " << train[i];
    differ += d > 0.5;
  }
  return differ;
}

// The gap from |x| to the next float away from zero.
double ulp_of(float x) {
  const float a = std::fabs(x);
  return double(std::nextafter(a, INFINITY)) - double(a);
}

class ReferenceVsTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir_ = testutil::make_temp_dir("reference");
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // ./reference and ./train --threads 1 for kSteps steps on `world` ranks from seed 42: every
  // step's parameters against the bound above, every rank's loss lines.
  void compare(int world) {
    const std::string ref = dir_ + "/ref", common = " --max-steps " + std::to_string(kSteps) + " --log-interval 1";
    ASSERT_EQ(::mkdir(ref.c_str(), 0755), 0);
    auto r = run(on_ranks(world) + testutil::reference_bin() + common + " --dump-steps " + ref, 600);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    testutil::RunResult t;
    for (int k = 0; k <= kSteps; ++k) {  // ./train's parameters after step k: a run of k steps
      t = run(on_ranks(world) + testutil::train_bin() + " --threads 1 --log-interval 1 --max-steps " +
                  std::to_string(k) + " --dump-params " + dir_ + "/train" + std::to_string(k) + ".%r.f32",
              300);
      ASSERT_EQ(t.status, 0) << t.out << t.err;
    }
    for (int rank = 0; rank < world; ++rank) {
      const int differ = expect_same_up_to_last_digit(rank_lines(r.out, world, rank), rank_lines(t.out, world, rank),
                                                      "Loss: ", 1, "rank " + std::to_string(rank));
      EXPECT_EQ(rank_lines(r.out, world, rank).size(), size_t(kSteps));
      std::printf("W=%d rank %d: %d of %d loss lines differ in the last digit\n", world, rank, differ, kSteps);
    }
    check_parameters(world, ref);
  }

  void check_parameters(int world, const std::string& ref) {
    auto ref_at = [&](int k, int rank) {
      return floats_of(ref + "/step" + std::to_string(k) + ".rank" + std::to_string(rank) + ".f32");
    };
    auto train_at = [&](int k) { return floats_of(dir_ + "/train" + std::to_string(k) + ".0.f32"); };
    const double u = std::ldexp(1.0, -24), T = 64 * 24 * 24, rho = T * u / (1 - T * u);
    std::vector<double> bound(kNumParams, 0.0);  // the sum above, without the factor 2
    std::vector<float> before = ref_at(0, 0), train_before = train_at(0);
    ASSERT_EQ(before.size(), kNumParams);
    EXPECT_EQ(before, train_before) << "the start (init and broadcast) differs";
    double worst_share = 0, worst_abs = 0, least_guard = HUGE_VAL;
    for (int k = 1; k <= kSteps; ++k) {
      const std::vector<float> p = ref_at(k, 0), q = train_at(k);
      ASSERT_EQ(p.size(), kNumParams) << "step " << k;
      ASSERT_EQ(q.size(), kNumParams) << "step " << k;
      for (int rank = 1; rank < world; ++rank) EXPECT_EQ(ref_at(k, rank), p) << "rank " << rank << " step " << k;
      double share = 0, guard = 0;
      for (size_t i = 0; i < kNumParams; ++i) {
        bound[i] += ulp_of(std::fabs(p[i]) > std::fabs(q[i]) ? p[i] : q[i]) + rho * std::fabs(p[i] - before[i]);
        const double tol = 2 * bound[i], diff = std::fabs(double(p[i]) - double(q[i]));
        share = std::max(share, diff / tol);
        worst_abs = std::max(worst_abs, diff);
        guard = std::max(guard, std::fabs(double(p[i]) - double(train_before[i])) / tol);
      }
      EXPECT_LE(share, 1.0) << "W=" << world << " step " << k << ": parameters differ beyond float summation order";
      worst_share = std::max(worst_share, share);
      least_guard = std::min(least_guard, guard);
      before = p;
      train_before = q;
    }
    std::printf("W=%d: max |reference - train| %.3g; largest share of the bound used %.3g; one step off: %.3g x\n",
                world, worst_abs, worst_share, least_guard);
    EXPECT_GT(least_guard, 10.0) << "the bound is too loose to tell a step from the next";
  }

  std::string dir_;
};

TEST_F(ReferenceVsTrain, OneRank) { compare(1); }
TEST_F(ReferenceVsTrain, TwoRanksGloo) { compare(2); }
TEST_F(ReferenceVsTrain, ThreeRanksGloo) { compare(3); }

// The first `count` records of an MNIST IDX file (header_bytes of header, record_bytes each).
void write_subset(const std::string& from, const std::string& to, size_t header_bytes, size_t record_bytes,
                  uint32_t count) {
  std::string b = testutil::read_file(from);
  ASSERT_GE(b.size(), header_bytes + count * record_bytes) << from;
  b.resize(header_bytes + count * record_bytes);
  const std::string n = testutil::be32(count);
  b.replace(4, 4, n);  // the record count follows the magic
  testutil::write_file(to, b);
}

// A whole epoch, so the test pass runs too: 640 training and 1,000 test images of MNIST on two
// ranks. The test line's loss (4 decimals) may differ by one unit as the loss lines do; the
// accuracy by one image at most (0.10%): a different answer needs two log-probabilities of an
// image within rounding (about 1e-7) of each other.
TEST_F(ReferenceVsTrain, EpochOfASubsetPrintsTheSameTestLine) {
  const std::string raw = "data/MNIST/raw/";
  for (const char* split : {"train", "t10k"}) {
    const uint32_t count = std::string(split) == "train" ? 640 : 1000;
    write_subset(raw + split + "-images-idx3-ubyte", dir_ + "/" + split + "-images-idx3-ubyte", 16, 784, count);
    write_subset(raw + split + "-labels-idx1-ubyte", dir_ + "/" + split + "-labels-idx1-ubyte", 8, 1, count);
  }
  const std::string args = " --epochs 1 --log-interval 1 --data-dir " + dir_;
  auto r = run(on_ranks(2) + testutil::reference_bin() + args, 300);
  auto t = run(on_ranks(2) + testutil::train_bin() + " --threads 1" + args, 300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_EQ(t.status, 0) << t.out << t.err;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> a = rank_lines(r.out, 2, rank), b = rank_lines(t.out, 2, rank);
    EXPECT_EQ(a.size(), rank == 0 ? 5u + 3 : 5u) << r.out;  // 5 steps of 64; rank 0: "", the test line, ""
    std::vector<std::string> test_a, test_b;
    for (auto* v : {&a, &b})
      for (auto it = v->begin(); it != v->end();)
        if (it->rfind("Test set: ", 0) == 0) {
          (v == &a ? test_a : test_b).push_back(*it);
          it = v->erase(it);
        } else {
          ++it;
        }
    expect_same_up_to_last_digit(a, b, "Loss: ", 1, "rank " + std::to_string(rank));
    ASSERT_EQ(test_a.size(), rank == 0 ? 1u : 0u) << r.out;
    ASSERT_EQ(test_b.size(), test_a.size()) << t.out;
    if (rank != 0) continue;
    std::printf("reference: %s\ntrain:     %s\n", test_a[0].c_str(), test_b[0].c_str());
    const size_t comma = test_a[0].find(", Accuracy: ");
    ASSERT_NE(comma, std::string::npos) << test_a[0];
    expect_same_up_to_last_digit({test_a[0].substr(0, comma)}, {test_b[0].substr(0, comma)}, "Average loss: ", 1,
                                 "test loss");
    expect_same_up_to_last_digit({test_a[0]}, {test_b[0]}, "Accuracy: ", 10, "test accuracy");  // 0.10% = 10 units
  }
}

// The ring is the reference's own code over Communicator::exchange, so Open MPI moves the same
// bytes Gloo does: the same loss lines and the same final parameters, bit for bit.
TEST_F(ReferenceVsTrain, MpiGivesTheGlooRunExactly) {
  const std::string args = " --max-steps " + std::to_string(kSteps) + " --log-interval 1 --dump-params " + dir_;
  auto gloo = run(on_ranks(2, "--gloo") + testutil::reference_bin() + args + "/gloo.%r.f32", 300);
  auto mpi = run(on_ranks(2, "--mpi") + testutil::reference_bin() + args + "/mpi.%r.f32", 300);
  ASSERT_EQ(gloo.status, 0) << gloo.out << gloo.err;
  ASSERT_EQ(mpi.status, 0) << mpi.out << mpi.err;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(rank_lines(mpi.out, 2, rank), rank_lines(gloo.out, 2, rank)) << "rank " << rank;
    EXPECT_EQ(rank_lines(gloo.out, 2, rank).size(), size_t(kSteps));
    const std::string suffix = "." + std::to_string(rank) + ".f32";
    EXPECT_EQ(floats_of(dir_ + "/mpi" + suffix), floats_of(dir_ + "/gloo" + suffix)) << "rank " << rank;
    EXPECT_EQ(floats_of(dir_ + "/gloo" + suffix).size(), kNumParams);
  }
}

// A bad flag or value: one line on stderr naming it, nothing on stdout, exit status 2.
TEST(Reference, BadFlagIsOneLineAndExitTwo) {
  for (const std::string args : {"--no-such-flag 1", "--epochs x", "--lr -1", "--batch-size"}) {
    auto r = run(testutil::reference_bin() + " " + args, 60);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("reference: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(args.substr(0, args.find(' '))), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace
