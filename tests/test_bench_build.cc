// test_bench_build: `make bench`'s programs (bench/kernel_bench.cc, bench/comm_bench.cc,
// bench/report_input.cc) still compile against build/libbaresgd.a, so an interface change cannot
// leave the bench broken until someone runs it (BENCH_BUILD_ONLY=1 bench/run_bench.sh builds them
// and stops).
// Env: BARESGD_SRC (the source tree; make test sets it), its optimized build in build/.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

TEST(BenchPrograms, CompileAgainstTheLibrary) {
  const std::string src = testutil::env_or("BARESGD_SRC", ".");
  const std::string out = testutil::make_temp_dir("bench-build");
  auto r = testutil::run("cd '" + src + "' && BENCH_BUILD_ONLY=1 BENCH_OUT='" + out + "' bash bench/run_bench.sh", 600);
  EXPECT_EQ(r.status, 0) << r.err << testutil::run("cat '" + out + "'/build-*.log").out;
  EXPECT_NE(r.err.find("built build/bench/kernel_bench, build/bench/comm_bench and build/bench/report_input"),
            std::string::npos)
      << r.err;
  testutil::run("rm -rf '" + out + "'");
}

// The ./report rows' driver on a small run: the generated trace is read and the row says ok (its
// seconds are `make bench`'s business, not a test's).
TEST(BenchPrograms, ReportRowsRunOnASmallTimeline) {
  const std::string src = testutil::env_or("BARESGD_SRC", ".");
  const std::string out = testutil::make_temp_dir("bench-report");
  auto r = testutil::run(
      "cd '" + src + "' && BENCH_BUILD_ONLY=1 BENCH_OUT='" + out + "/build' bash bench/run_bench.sh && " +
          "BENCH_REPORT_STEPS=40 BENCH_REPORT_RANKS=3 bash bench/report_bench.sh build/bench/report_input '" + out +
          "/report'",
      600);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::regex row(R"(\n3 +40 +[0-9]+ +([0-9]+) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ ok\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, row)) << r.out << r.err;
  // Per rank and step of a 3-rank ring: 16 slices and 8 flow ends, and metadata besides.
  EXPECT_GT(std::stol(m[1]), 3 * 40 * 18);
  testutil::run("rm -rf '" + out + "'");
}

// The store rows' driver on small runs: both modes complete and say ok (their seconds are
// `make bench`'s business); the gather's requests grow with W, a get per peer's with W(W-1).
TEST(BenchPrograms, StoreRowsRunWithFewFakeRanks) {
  const std::string src = testutil::env_or("BARESGD_SRC", ".");
  const std::string out = testutil::make_temp_dir("bench-store");
  auto r = testutil::run("cd '" + src +
                             "' && BENCH_STORE_GATHER='8 32' BENCH_STORE_PER_KEY=32 bash bench/store_load_bench.sh '" +
                             out + "'",
                         600);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::regex row(R"(\n(gather|per-key) +([0-9]+) +[0-9.]+ +[0-9.]+ +([0-9]+) +[0-9]+ +[0-9.]+ +[0-9]+ ok)");
  std::map<std::string, long> requests;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), row), end; it != end; ++it)
    requests[(*it)[1].str() + (*it)[2].str()] = std::stol((*it)[3]);
  ASSERT_EQ(requests.size(), 3u) << r.out << r.err;
  EXPECT_GE(requests["per-key32"], 32 * 31 + 2 * 32);  // a get per peer at least, and the add and set
  EXPECT_LT(requests["gather32"], requests["per-key32"]);
  testutil::run("rm -rf '" + out + "'");
}

// The start-up rows' driver on small jobs: every row a real ./launch job whose every rank took
// its one step (the seconds are `make bench`'s business).
TEST(BenchPrograms, StartupRowsRunSmallJobsOfBothBackends) {
  if (!testutil::have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  const std::string src = testutil::env_or("BARESGD_SRC", ".");
  const std::string out = testutil::make_temp_dir("bench-startup");
  auto r = testutil::run(
      "cd '" + src + "' && BENCH_STARTUP_GLOO='2 4' BENCH_STARTUP_MPI=2 bash bench/startup_bench.sh '" + out + "'",
      600);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::regex row(R"(\n(gloo|mpi) +([0-9]+) +[0-9.]+ +([0-9]+) ok)");
  std::map<std::string, int> stepped;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), row), end; it != end; ++it)
    stepped[(*it)[1].str() + (*it)[2].str()] = std::stoi((*it)[3]);
  EXPECT_EQ(stepped, (std::map<std::string, int>{{"gloo2", 2}, {"gloo4", 4}, {"mpi2", 2}})) << r.out << r.err;
  testutil::run("rm -rf '" + out + "'");
}

}  // namespace
