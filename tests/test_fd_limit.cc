// test_fd_limit: ./launch's open-file budget (launcher/fd_limit.h): the refusal's words, and the
// real launcher under `ulimit -n`: a low soft limit is raised to the hard one (the job runs), a
// hard limit below the job's need is refused in one line before any rank starts.
#include <gtest/gtest.h>

#include <string>

#include "launcher/fd_limit.h"
#include "tests/test_util.h"

namespace {

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace

TEST(FdLimit, NeedGrowsWithTheRanks) {
  EXPECT_EQ(fds_needed(1), kFdsPerRank + kFdsOwn);
  EXPECT_EQ(fds_needed(260), 260 * kFdsPerRank + kFdsOwn);
  EXPECT_EQ(fd_limit_refusal(260, 1072, 1072), "");
  EXPECT_EQ(fd_limit_refusal(260, 1072, 1024),
            "launch: 260 ranks need about 1072 open files (4 per rank + 32) but the hard limit is 1024 (ulimit -Hn): "
            "raise it (nofile in /etc/security/limits.conf, or LimitNOFILE) or start fewer ranks from this launcher");
}

TEST(FdLimit, ALowSoftLimitIsRaisedToTheHardOne) {
  // Soft 64 cannot hold 20 ranks (112 descriptors); the hard limit can: the launcher raises its soft
  // limit, and its ranks inherit the raised one.
  auto r =
      testutil::run("ulimit -Sn 64 && exec '" + testutil::launch_bin() + "' -np 20 --gloo sh -c 'ulimit -Sn'", 120);
  ASSERT_EQ(r.status, 0) << r.err;
  auto hard = testutil::run("ulimit -Hn", 10);
  EXPECT_TRUE(has(r.out, "[19]<stdout>:" + hard.out)) << r.out;
}

TEST(FdLimit, AHardLimitBelowTheNeedIsRefusedBeforeAnyRankStarts) {
  const std::string marker = testutil::make_temp_dir("fdlimit") + "/started";
  auto r = testutil::run("ulimit -n 200 && exec '" + testutil::launch_bin() + "' -np 60 --gloo touch " + marker, 60);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err,
            "launch: 60 ranks need about 272 open files (4 per rank + 32) but the hard limit is 200 (ulimit -Hn): "
            "raise it (nofile in /etc/security/limits.conf, or LimitNOFILE) or start fewer ranks from this launcher\n");
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "a rank started";
}
