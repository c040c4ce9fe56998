// fuzz_metrics: libFuzzer target for ./report's metrics reader and the page built from it
// (reporting/metrics_reader.h: parse_metrics_text; reporting/html_report.h: build_report_html).
//
// Input: the bytes are the metrics file's text. To reach past the header check most of the time,
// byte 0 bit 0 set prepends a valid 4-rank header line; the rest is the text after it.
// Contract checked: parse_metrics_text returns or throws MetricsError, nothing else; every error
// is one line that starts with the file name; accepted records have ranks inside the world size
// and accuracies in [0,1]; the page built from an accepted file has exactly one <script> (the
// report's own: no text from the file escapes into markup), no "http" and no "src=".
//
// Build: make fuzz (build-fuzz/fuzz_metrics); run: .ci/fuzz.sh
#include <cstdint>
#include <string>

#include "reporting/html_report.h"
#include "reporting/metrics_reader.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

const char* const kHeader =
    "{\"type\":\"header\",\"format\":\"baresgd-metrics\",\"version\":1,\"world_size\":4,\"backend\":\"gloo\","
    "\"algorithm\":\"ring\",\"hosts\":[\"a\",\"a\",\"b\",\"b\"],\"flags\":{\"batch_size\":64}}\n";

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const bool with_header = in.u8() & 1;
  const std::string text = (with_header ? std::string(kHeader) : std::string()) + in.rest();
  ReportInput r;
  r.metrics_name = "fuzz.jsonl";
  try {
    r.metrics = parse_metrics_text(text, "fuzz.jsonl");
  } catch (const MetricsError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("fuzz.jsonl:", 0) == 0);
    FUZZ_CHECK(m.find('\n') == std::string::npos);
    return 0;
  }
  const Metrics& m = r.metrics;
  FUZZ_CHECK(m.header.world_size >= 1 && int(m.header.hosts.size()) == m.header.world_size);
  for (const ReportStep& s : m.steps) FUZZ_CHECK(s.rank >= 0 && s.rank < m.header.world_size);
  for (const InspectRecord& s : m.inspects) FUZZ_CHECK(s.rank >= 0 && s.rank < m.header.world_size);
  for (const TestRecord& t : m.tests) FUZZ_CHECK(t.accuracy >= 0 && t.accuracy <= 1);
  if (m.header.world_size > 4096) return 0;  // the page lists every rank; keep each run fast
  const std::string html = build_report_html(r);
  FUZZ_CHECK(count(html, "<script") == 1);
  FUZZ_CHECK(html.find("http") == std::string::npos || text.find("http") != std::string::npos);
  FUZZ_CHECK(html.find("src=") == std::string::npos || text.find("src=") != std::string::npos);
  return 0;
}
