// report_main: ./report METRICS [TIMELINE] -o report.html — turns a --metrics file (and optionally
// a --timeline file) into one self-contained HTML page. Exit 0 on success, 1 when an input cannot
// be read or is not ours or the output cannot be written (one line naming the file), 2 on a
// usage error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reporting/file_io.h"
#include "reporting/html_report.h"
#include "src/version_text.h"

namespace {

const char* const kUsage =
    "usage: report METRICS [TIMELINE] -o OUTPUT.html\n"
    "  METRICS   a ./train --metrics file (JSON Lines, docs/metrics.md)\n"
    "  TIMELINE  optional: a ./train --timeline file (Chrome Trace Event JSON)\n"
    "  -o, --output FILE  the HTML page to write (self-contained: inline SVG, nothing fetched)\n"
    "  -h, --help         this text\n"
    "  --version          print the version and exit\n";

struct Args {
  std::vector<std::string> inputs;
  std::string output;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "report: %s (see report --help)\n", why.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  bool have_output = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--version") {
      std::fputs(version_text("report").c_str(), stdout);
      std::exit(0);
    }
    if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc) usage_error(arg + " needs a file name");
      a.output = argv[++i];
      have_output = true;
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
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  ReportInput in;
  try {
    in.metrics_name = args.inputs[0];
    in.metrics = read_metrics_file(args.inputs[0]);
    if (args.inputs.size() == 2) {
      in.has_timeline = true;
      in.timeline_name = args.inputs[1];
      in.timeline = read_timeline_file(args.inputs[1]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report: %s\n", e.what());
    return 1;
  }
  for (const std::string& w : in.metrics.warnings) std::fprintf(stderr, "report: warning: %s\n", w.c_str());
  std::string error;
  if (!write_whole_file(args.output, build_report_html(in), error)) {
    std::fprintf(stderr, "report: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
