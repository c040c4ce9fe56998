// test_allreduce: comm/allreduce.h — the --allreduce names and refusals, the exchange primitive,
// and every algorithm over real backends (tests/allreduce_checks.h):
//   AllreduceNames      parse/name round trip, the unknown-name and wrong-backend messages, ./train's flag
//   AllreduceSingle     the size-1 backend: ours are the identity, the libraries' refused
//   AllreduceGloo       W = 1..8 in-process Gloo ranks: auto, direct, ring, halving-doubling, gloo
//   AllreduceMpi        W = 1..8 processes under mpirun: mpi, ring, halving-doubling (closed forms
//                       at every size, summation order and observer at one size)
//   AllreduceTrain      2-rank ./train with --allreduce ring / halving-doubling: same bits on both
//                       ranks, in two runs, and as the default (two values sum the same either way);
//                       --allreduce gloo under --mpi stops before training with the reason
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/comm_internal.h"
#include "src/options.h"
#include "tests/skip_policy.h"
#include "tests/allreduce_checks.h"
#include "tests/comm_test_util.h"

namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

const std::vector<AllreduceAlgorithm> kAll = {AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kDirect,
                                              AllreduceAlgorithm::kRing, AllreduceAlgorithm::kHalvingDoubling,
                                              AllreduceAlgorithm::kGloo, AllreduceAlgorithm::kMpi};

}  // namespace

TEST(AllreduceNames, ParseAndNameRoundTrip) {
  const char* names[] = {"auto", "direct", "ring", "halving-doubling", "gloo", "mpi"};
  for (size_t i = 0; i < kAll.size(); ++i) {
    EXPECT_EQ(parse_allreduce_algorithm(names[i]), kAll[i]);
    EXPECT_STREQ(allreduce_algorithm_name(kAll[i]), names[i]);
  }
  try {
    parse_allreduce_algorithm("Ring");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown --allreduce 'Ring' (valid: auto, direct, ring, halving-doubling, gloo, mpi)");
  }
}

TEST(AllreduceNames, LibrariesNeedTheirBackend) {
  for (const char* backend : {"single", "gloo", "mpi"})
    for (int w : {1, 2, 3, 8})
      for (AllreduceAlgorithm a : {AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kDirect, AllreduceAlgorithm::kRing,
                                   AllreduceAlgorithm::kHalvingDoubling})
        EXPECT_EQ(allreduce_unsupported_reason(a, backend, w), "") << backend << " " << w;
  EXPECT_EQ(allreduce_unsupported_reason(AllreduceAlgorithm::kGloo, "gloo", 4), "");
  EXPECT_EQ(allreduce_unsupported_reason(AllreduceAlgorithm::kMpi, "mpi", 4), "");
  EXPECT_EQ(allreduce_unsupported_reason(AllreduceAlgorithm::kGloo, "mpi", 2),
            "--allreduce gloo runs Gloo's own allreduce and needs the gloo backend, but this job of 2 ranks runs on "
            "the mpi backend");
  EXPECT_EQ(allreduce_unsupported_reason(AllreduceAlgorithm::kMpi, "gloo", 3),
            "--allreduce mpi runs MPI_Allreduce and needs the mpi backend, but this job of 3 ranks runs on the gloo "
            "backend");
  EXPECT_EQ(allreduce_unsupported_reason(AllreduceAlgorithm::kMpi, "single", 1),
            "--allreduce mpi runs MPI_Allreduce and needs the mpi backend, but this job of 1 rank runs on the single "
            "backend");
}

TEST(AllreduceNames, TrainFlag) {
  EXPECT_EQ(parse_options({}).allreduce, "auto");
  EXPECT_EQ(parse_options({"--allreduce", "halving-doubling"}).allreduce, "halving-doubling");
  EXPECT_EQ(parse_options({"--allreduce=ring"}).allreduce, "ring");
  try {
    parse_options({"--allreduce", "bcube"});
    ADD_FAILURE() << "no error";
  } catch (const TrainUsageError& e) {
    EXPECT_EQ(e.message, "unknown --allreduce 'bcube' (valid: auto, direct, ring, halving-doubling, gloo, mpi)");
  }
  auto bad = testutil::run(testutil::train_bin() + " --allreduce bcube", 30);
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(has(bad.err,
                  "\ntrain: error: unknown --allreduce 'bcube' (valid: auto, direct, ring, halving-doubling, "
                  "gloo, mpi)\n"))
      << bad.err;
  auto wrong = testutil::run(testutil::train_bin() + " --allreduce gloo --max-steps 0", 60);
  EXPECT_EQ(wrong.status, 1);
  EXPECT_EQ(wrong.out, "");
  EXPECT_EQ(wrong.err,
            "train: error: --allreduce gloo runs Gloo's own allreduce and needs the gloo backend, but "
            "this job of 1 rank runs on the single backend\n");
}

TEST(AllreduceSingle, OursAreTheIdentityLibrariesRefused) {
  auto comm = make_single_communicator(RankInfo());
  allreducecheck::Checker c(*comm);
  c.run_all({AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kDirect, AllreduceAlgorithm::kRing,
             AllreduceAlgorithm::kHalvingDoubling});
  for (const auto& f : c.failures) ADD_FAILURE() << f;
  float g[2] = {1, 2};
  EXPECT_THROW(allreduce_sum(*comm, AllreduceAlgorithm::kGloo, g, 2, nullptr), std::invalid_argument);
  EXPECT_THROW(allreduce_sum(*comm, AllreduceAlgorithm::kMpi, g, 2, nullptr), std::invalid_argument);
  // exchange: only the rank itself (or nobody) is a peer.
  float h[2] = {0, 0};
  comm->exchange(g, sizeof g, 0, h, sizeof h, 0);
  EXPECT_EQ(h[1], 2.0f);
  comm->exchange(nullptr, 0, -1, nullptr, 0, -1);
  EXPECT_THROW(comm->exchange(g, sizeof g, 1, h, sizeof h, -1), std::invalid_argument);
  EXPECT_THROW(comm->exchange(g, sizeof g, -2, h, sizeof h, -1), std::invalid_argument);
  EXPECT_THROW(comm->exchange(g, sizeof g, 0, h, sizeof h, -1), std::invalid_argument);
}

#if BARESGD_HAVE_GLOO

namespace {

void gloo_algorithms(int w) {
  std::mutex mu;
  std::vector<std::string> failures;
  auto res = commtest::run_gloo_threads(
      w,
      [&](Communicator& comm) {
        allreducecheck::Checker c(comm);
        c.run_all({AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kDirect, AllreduceAlgorithm::kRing,
                   AllreduceAlgorithm::kHalvingDoubling, AllreduceAlgorithm::kGloo});
        float g[1] = {1};
        try {
          allreduce_sum(comm, AllreduceAlgorithm::kMpi, g, 1, nullptr);
          c.fail("--allreduce mpi ran on gloo");
        } catch (const std::invalid_argument& e) {
          if (!has(e.what(), "--allreduce mpi runs MPI_Allreduce and needs the mpi backend")) c.fail(e.what());
        }
        std::lock_guard<std::mutex> lock(mu);
        failures.insert(failures.end(), c.failures.begin(), c.failures.end());
      },
      CommOptions());
  for (size_t r = 0; r < res.errors.size(); ++r) EXPECT_EQ(res.errors[r], "") << "world " << w << " rank " << r;
  for (const auto& f : failures) ADD_FAILURE() << "world " << w << ": " << f;
}

}  // namespace

TEST(AllreduceGloo, EveryAlgorithmWorlds1to4) {
  for (int w = 1; w <= 4; ++w) gloo_algorithms(w);
}

TEST(AllreduceGloo, EveryAlgorithmWorlds5to8) {
  for (int w = 5; w <= 8; ++w) gloo_algorithms(w);
}

// Different peers on both sides (a ring of 3), one side only, overlapping buffers, bad peers.
TEST(AllreduceGloo, ExchangeWithTwoPeers) {
  auto res = commtest::run_gloo_threads(
      3,
      [](Communicator& comm) {
        const int r = comm.rank(), right = (r + 1) % 3, left = (r + 2) % 3;
        std::vector<int> out(1000 + r, r), in(1000 + left, -1);
        comm.exchange(out.data(), out.size() * sizeof(int), right, in.data(), in.size() * sizeof(int), left);
        EXPECT_EQ(in, std::vector<int>(1000 + left, left));
        int token = r == 0 ? 42 : 0;  // 0 -> 1 only
        comm.exchange(&token, r == 0 ? sizeof token : 0, r == 0 ? 1 : -1, &token, r == 1 ? sizeof token : 0,
                      r == 1 ? 0 : -1);
        EXPECT_EQ(token, r == 2 ? 0 : 42);
        std::vector<int> buf(8, r);  // send from and receive into the same buffer
        comm.exchange(buf.data(), buf.size() * sizeof(int), right, buf.data(), buf.size() * sizeof(int), left);
        EXPECT_EQ(buf, std::vector<int>(8, left));
        EXPECT_THROW(comm.exchange(buf.data(), 4, 3, nullptr, 0, -1), std::invalid_argument);
        EXPECT_THROW(comm.exchange(nullptr, 0, -1, buf.data(), 4, -5), std::invalid_argument);
        comm.barrier();
      },
      CommOptions());
  for (const auto& e : res.errors) EXPECT_EQ(e, "");
}

// A peer that never sends (and stays, until rank 0 has given up): the exchange times out naming it.
TEST(AllreduceGloo, ExchangeTimeoutNamesThePeer) {
  CommOptions opts;
  opts.comm_timeout = std::chrono::milliseconds(500);
  std::atomic<bool> gave_up{false};
  auto res = commtest::run_gloo_threads(
      2,
      [&](Communicator& comm) {
        int x = 0;
        if (comm.rank() == 0) {
          try {
            comm.exchange(nullptr, 0, -1, &x, sizeof x, 1);
          } catch (...) {
            gave_up = true;
            throw;
          }
          gave_up = true;
        } else {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
          while (!gave_up && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      },
      opts);
  EXPECT_TRUE(has(res.errors[0], "rank 0 (host localhost): gloo exchange timed out after 0.5 s waiting for rank 1"))
      << res.errors[0];
  EXPECT_EQ(res.errors[1], "");
}

#endif  // BARESGD_HAVE_GLOO

TEST(AllreduceMpi, EveryAlgorithmWorlds1to8) {
  const std::string mpirun = commtest::find_in_path("mpirun");
  if (mpirun.empty()) BARESGD_SKIP("mpirun is not installed");
#if !BARESGD_HAVE_MPI
  BARESGD_SKIP("built without MPI");
#else
  for (int w = 1; w <= 8; ++w) {
    commtest::ProcSpec s{{mpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(w),
                          commtest::tool_path(), "--script", "algorithms", "--algorithms", "mpi,ring,halving-doubling"},
                         {"OMPI_MCA_mpi_yield_when_idle=1"}};
    auto run = commtest::run_processes({s}, 120);
    ASSERT_FALSE(run.timed_out) << run.describe();
    EXPECT_EQ(run.procs[0].status, 0) << run.describe();
    for (int r = 0; r < w; ++r)
      EXPECT_TRUE(has(run.procs[0].out, "OK rank=" + std::to_string(r) + " size=" + std::to_string(w) + " backend=mpi"))
          << run.describe();
  }
#endif
}

namespace {

class AllreduceTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("allreduce-train");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  // Two Gloo ranks, 8 steps; returns rank 0's and rank 1's parameters.
  std::vector<std::string> train2(const std::string& flags, const std::string& name) {
    auto r = testutil::run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() +
                               " --max-steps 8 --epochs 1 --test-batch-size 1000 " + flags + " --dump-params " + dir +
                               "/" + name + ".%r.bin",
                           180);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    return {testutil::read_file(dir + "/" + name + ".0.bin"), testutil::read_file(dir + "/" + name + ".1.bin")};
  }
  std::string dir;
};

}  // namespace

TEST_F(AllreduceTrain, RingAndHalvingDoublingSameBitsOnBothRanksAndAcrossRuns) {
  const auto base = train2("", "auto");
  ASSERT_EQ(base[0].size(), 21840u * 4);
  EXPECT_EQ(base[0], base[1]);
  for (const char* alg : {"ring", "halving-doubling"}) {
    const auto a = train2(std::string("--allreduce ") + alg, std::string(alg) + "-a");
    const auto b = train2(std::string("--allreduce ") + alg, std::string(alg) + "-b");
    ASSERT_EQ(a[0].size(), 21840u * 4) << alg;
    EXPECT_EQ(a[0], a[1]) << alg << ": the ranks' parameters differ";
    EXPECT_EQ(a[0], b[0]) << alg << ": two runs differ";
    // Two ranks: every algorithm adds the same two values (a + b == b + a), so the default's bits.
    EXPECT_EQ(a[0], base[0]) << alg << ": differs from --allreduce auto";
  }
}

TEST_F(AllreduceTrain, GlooUnderMpiIsRefusedBeforeTraining) {
  if (commtest::find_in_path("mpirun").empty()) BARESGD_SKIP("mpirun is not installed");
  auto r = testutil::run(
      testutil::launch_bin() + " -np 2 --mpi " + testutil::train_bin() + " --allreduce gloo --max-steps 1", 120);
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(has(r.out, "Train Epoch")) << r.out;
  EXPECT_TRUE(has(r.err,
                  "train: error: --allreduce gloo runs Gloo's own allreduce and needs the gloo backend, but "
                  "this job of 2 ranks runs on the mpi backend"))
      << r.err;
}
