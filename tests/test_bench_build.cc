// test_bench_build: `make bench`'s two programs (bench/kernel_bench.cc, bench/comm_bench.cc) still
// compile against build/libbaresgd.a, so an interface change cannot leave the bench broken until
// someone runs it (BENCH_BUILD_ONLY=1 bench/run_bench.sh builds them and stops).
// Env: BARESGD_SRC (the source tree; make test sets it), its optimized build in build/.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace {

TEST(BenchPrograms, CompileAgainstTheLibrary) {
  const std::string src = testutil::env_or("BARESGD_SRC", ".");
  const std::string out = testutil::make_temp_dir("bench-build");
  auto r = testutil::run("cd '" + src + "' && BENCH_BUILD_ONLY=1 BENCH_OUT='" + out + "' bash bench/run_bench.sh", 600);
  EXPECT_EQ(r.status, 0) << r.err << testutil::run("cat '" + out + "'/build-*.log").out;
  EXPECT_NE(r.err.find("built build/bench/kernel_bench and build/bench/comm_bench"), std::string::npos) << r.err;
  testutil::run("rm -rf '" + out + "'");
}

}  // namespace
