// test_main: the suite's main (in place of gtest_main). It runs every test as GoogleTest does, then
// prints one closing line with the run's counts, "N passed, N failed, N skipped" (what .ci/run
// sums per build), and, under CI, fails the run when any test skipped for a reason that is not on
// tests/skip_allowlist.txt, naming each: a bare GTEST_SKIP that bypassed BARESGD_SKIP is caught
// here (tests/skip_policy.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/skip_policy.h"

namespace {

// The skip message GoogleTest recorded for a skipped test ("" if it gave none).
std::string skip_message(const testing::TestResult& result) {
  for (int i = 0; i < result.total_part_count(); ++i) {
    const testing::TestPartResult& part = result.GetTestPartResult(i);
    if (part.skipped()) return part.message() ? part.message() : "";
  }
  return "";
}

class SkipAudit : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& info) override {
    const testing::TestResult& result = *info.result();
    if (result.Failed()) ++failed_;
    else if (result.Skipped()) ++skipped_;
    else ++passed_;
    if (!result.Skipped()) return;
    const std::string reason = skip_message(result);
    if (!testutil::skip_allowed(reason))
      refused_.push_back(std::string(info.test_suite_name()) + "." + info.name() + ": " + reason);
  }
  void OnTestProgramEnd(const testing::UnitTest&) override {
    for (const std::string& line : refused_)
      std::printf("skip refused under CI (not on %s): %s\n", testutil::skip_allowlist_path().c_str(), line.c_str());
    std::printf("%d passed, %d failed, %d skipped\n", passed_, failed_, skipped_);
    std::fflush(stdout);
  }
  bool refused_any() const { return !refused_.empty(); }

 private:
  int passed_ = 0, failed_ = 0, skipped_ = 0;
  std::vector<std::string> refused_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto* audit = new SkipAudit;  // owned by GoogleTest's listener list
  testing::UnitTest::GetInstance()->listeners().Append(audit);
  const int status = RUN_ALL_TESTS();
  return status != 0 || audit->refused_any() ? 1 : 0;
}
