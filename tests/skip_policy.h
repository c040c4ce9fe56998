// skip_policy: the one way a test of this suite skips. Outside CI a test may skip and say why;
// under CI (CI=true in the environment, as .ci/run runs) a skip fails the test unless its reason is
// on tests/skip_allowlist.txt, where each entry says why that component cannot run on a CI machine.
// So a suite whose component did not start (the Slurm cluster, the namespace hosts, debootstrap)
// is a failure in CI, with the component's own error, and never a quiet green.
//
//   BARESGD_SKIP("no MNIST in " << dir << " (make data)");     // a stream, as GTEST_SKIP() << takes
//
// tests/test_main.cc also checks every skip at the end of the run (a bare GTEST_SKIP that bypassed
// this macro still fails the run under CI), and SkipPolicy.* tests keep bare GTEST_SKIPs out of tests/.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace testutil {

// True when the suite runs under CI: the environment's CI is "true" (or "1").
inline bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

// The allowlist's path: $BARESGD_SKIP_ALLOWLIST, else $BARESGD_SRC/tests/skip_allowlist.txt.
inline std::string skip_allowlist_path() {
  if (const char* p = std::getenv("BARESGD_SKIP_ALLOWLIST")) return p;
  const char* src = std::getenv("BARESGD_SRC");
  return std::string(src ? src : ".") + "/tests/skip_allowlist.txt";
}

// True when `reason` is an entry of the allowlist: a line "REASON | WHY" whose REASON equals it
// (blanks around REASON ignored). Lines starting with # are comments; an entry without a WHY
// does not count.
inline bool skip_reason_listed(const std::string& reason, const std::string& allowlist_text) {
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  std::istringstream in(allowlist_text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find(" | ");
    if (bar == std::string::npos || trim(line.substr(bar + 3)).empty()) continue;
    if (trim(line.substr(0, bar)) == trim(reason)) return true;
  }
  return false;
}

// True when a test may skip for `reason` here: always outside CI; under CI only when listed.
inline bool skip_allowed(const std::string& reason) {
  if (!under_ci()) return true;
  std::ifstream in(skip_allowlist_path());
  std::stringstream text;
  text << in.rdbuf();
  return skip_reason_listed(reason, text.str());
}

}  // namespace testutil

// Skips the current test with the streamed reason, or fails it under CI when the reason is not on
// the allowlist. Like GTEST_SKIP and FAIL it returns from the current (void) function.
#define BARESGD_SKIP(reason_stream)                                                                  \
  do {                                                                                               \
    std::ostringstream baresgd_skip_os_;                                                             \
    baresgd_skip_os_ << reason_stream;                                                               \
    const std::string baresgd_skip_reason_ = baresgd_skip_os_.str();                                 \
    if (testutil::skip_allowed(baresgd_skip_reason_)) GTEST_SKIP() << baresgd_skip_reason_;          \
    FAIL() << "skipped under CI, and the reason is not on " << testutil::skip_allowlist_path() << ": " \
           << baresgd_skip_reason_;                                                                  \
  } while (0)
