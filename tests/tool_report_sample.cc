// tool_report_sample: writes the synthetic 4-rank metrics file (3 epochs, --inspect 0,100) and a
// killed run's timeline from tests/report_samples.h, for trying ./report and for the docs image:
//   build/tests/tool_report_sample METRICS TIMELINE
#include <cstdio>

#include "tests/report_samples.h"
#include "tests/test_util.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tool_report_sample METRICS TIMELINE\n");
    return 2;
  }
  testutil::write_file(argv[1], report_samples::metrics_file(4, 3, {0, 100}));
  testutil::write_file(argv[2], report_samples::timeline_file(4, 20));
  return 0;
}
