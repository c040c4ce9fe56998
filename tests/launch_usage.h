// launch_usage: the one-line usage error ./launch's option parser gives for a command line, for the
// option tests (tests/test_launch_units.cc, test_launch_restarts.cc, test_launch_elastic.cc).
#pragma once
#include <string>
#include <vector>

#include "launcher/options.h"

// parse_launch_options(a)'s UsageError text ("" when a parses); *show_usage says whether the
// launcher would print its usage after it.
inline std::string usage_error(const std::vector<std::string>& a, bool* show_usage = nullptr) {
  try {
    parse_launch_options(a);
  } catch (const UsageError& e) {
    if (show_usage) *show_usage = e.show_usage;
    return e.what();
  }
  return "";
}
