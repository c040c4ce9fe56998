// report_main: ./report METRICS [TIMELINE] -o report.html — turns a --metrics file (and optionally
// a --timeline file) into one self-contained HTML page. Exit 0 on success, 1 when an input cannot
// be read or is not ours or the output cannot be written (one line naming the file), 2 on a
// usage error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reporting/file_io.h"
#include "reporting/html_report.h"
#include "src/program_name.h"
#include "src/version_text.h"

namespace {

const char* const kUsage =
    "usage: report METRICS [TIMELINE] -o OUTPUT.html\n"
    "  METRICS   a ./train --metrics file (JSON Lines, docs/metrics.md)\n"
    "  TIMELINE  optional: a ./train --timeline file (Chrome Trace Event JSON)\n"
    "  -o, --output FILE  the HTML page to write (self-contained: inline SVG, nothing fetched)\n"
    "      --step N       the timeline step the lane chart draws (default: the median-duration\n"
    "                     recorded step after the first); a step not in TIMELINE is an error\n"
    "      --section timeline  the page holds only the header and the timeline section\n"
    "  -h, --help         this text\n"
    "      --version      print the version and the CPU it was built for, and exit\n";

struct Args {
  std::vector<std::string> inputs;
  std::string output;
  long step = -1;
  bool timeline_only = false;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "report: %s (see report --help)\n", why.c_str());
  std::exit(2);
}

long step_number(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0) usage_error("--step needs a step number >= 0, not '" + text + "'");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  bool have_output = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(with_program_name(kUsage, "report", invoked_name("report")).c_str(), stdout);
      std::exit(0);
    }
    if (arg == "--version") {
      std::fputs(version_text("report", /*uses_backends=*/false).c_str(), stdout);
      std::exit(0);
    }
    if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc) usage_error(arg + " needs a file name");
      a.output = argv[++i];
      have_output = true;
    } else if (arg == "--section") {
      if (i + 1 >= argc || std::string(argv[i + 1]) != "timeline") usage_error("--section takes 'timeline'");
      ++i;
      a.timeline_only = true;
    } else if (arg == "--step") {
      if (i + 1 >= argc) usage_error("--step needs a step number");
      a.step = step_number(argv[++i]);
    } else if (arg.rfind("--step=", 0) == 0) {
      a.step = step_number(arg.substr(7));
    } else if (arg.rfind("--output=", 0) == 0) {
      a.output = arg.substr(9);
      have_output = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      usage_error("unknown option " + arg);
    } else {
      a.inputs.push_back(arg);
    }
  }
  if (a.inputs.empty()) usage_error("no METRICS file given");
  if (a.inputs.size() > 2) usage_error("too many inputs: " + a.inputs[2] + " (give METRICS and at most one TIMELINE)");
  if (!have_output || a.output.empty()) usage_error("-o OUTPUT is required");
  if (a.timeline_only && a.inputs.size() < 2) usage_error("--section timeline needs a TIMELINE file");
  if (a.step >= 0 && a.inputs.size() < 2) usage_error("--step needs a TIMELINE file");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  // The input is left to the OS at exit (held by a static, so it is still reachable, not a leak):
  // freeing a long trace's millions of slices one by one costs a good share of a report's time.
  static ReportInput* const input = new ReportInput;
  ReportInput& in = *input;
  try {
    in.metrics_name = args.inputs[0];
    in.metrics = read_metrics_file(args.inputs[0]);
    if (args.inputs.size() == 2) {
      in.has_timeline = true;
      in.timeline_name = args.inputs[1];
      in.timeline = read_timeline_file(args.inputs[1]);
      in.lane_step = args.step;
      in.timeline_only = args.timeline_only;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report: %s\n", e.what());
    return 1;
  }
  if (in.lane_step >= 0) {
    const std::vector<long> steps = recorded_steps(in.timeline);
    if (!std::binary_search(steps.begin(), steps.end(), in.lane_step)) {
      std::fprintf(stderr, "report: --step %ld: not a step recorded in %s (it holds %s)\n", in.lane_step,
                   in.timeline_name.c_str(),
                   steps.empty()
                       ? "no steps"
                       : ("steps " + std::to_string(steps.front()) + "-" + std::to_string(steps.back())).c_str());
      return 1;
    }
  }
  for (const std::string& w : in.metrics.warnings) std::fprintf(stderr, "report: warning: %s\n", w.c_str());
  std::string error;
  if (!write_whole_file(args.output, build_report_html(in), error)) {
    std::fprintf(stderr, "report: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
