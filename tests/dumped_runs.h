// dumped_runs: what the tests that compare two ./train runs bit for bit share: the values of one
// field of every rank's BARESGD_TIMING line (which path a run took), and the per-rank comparison of
// the parameters each rank dumped (--dump-params DIR/<name>.%r.bin).
#pragma once
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "tests/test_util.h"

namespace testutil {

// Every value of `field`=N on the ranks' "timing: rank=R ..." lines in err.
inline std::set<long> timing_values(const std::string& err, const std::string& field) {
  std::set<long> seen;
  std::regex re("timing: rank=[0-9]+ .* " + field + "=([0-9]+)");
  for (std::sregex_iterator it(err.begin(), err.end(), re), end; it != end; ++it) seen.insert(std::stol((*it)[1]));
  return seen;
}

// DIR/<a>.<rank>.bin equals DIR/<b>.<rank>.bin on every rank, each the net's 21,840 floats.
inline void expect_same_dumped_params(const std::string& dir, const std::string& a, const std::string& b, int world,
                                      const std::string& what) {
  for (int rank = 0; rank < world; ++rank) {
    const std::string left = read_file(dir + "/" + a + "." + std::to_string(rank) + ".bin");
    ASSERT_EQ(left.size(), 21840u * 4) << "rank " << rank;
    EXPECT_TRUE(left == read_file(dir + "/" + b + "." + std::to_string(rank) + ".bin"))
        << "rank " << rank << ": " << what;
  }
}

}  // namespace testutil
