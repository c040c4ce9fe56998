// test_report: ./report and its parts — the strict JSON parser (values, exact errors with line and
// column, the depth and size limits, \u escapes), the metrics reader (a good file, a file that is
// not ours, a bad line, a cut-short last line), the timeline reader (a killed run's array), the
// HTML page (the chart ids, one polyline per rank, escaping, nothing external), the command's exit
// codes and messages, and the page in a real browser: Debian's headless chromium loads it with no
// console errors and the SVG elements in its DOM (the timeline lane chart too), and takes a
// screenshot.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <regex>

#include "reporting/byte_source.h"
#include "reporting/html_report.h"
#include "reporting/json.h"
#include "reporting/metrics_reader.h"
#include "reporting/timeline_reader.h"
#include "tests/algorithm_trace.h"
#include "tests/skip_policy.h"
#include "tests/report_samples.h"
#include "tests/test_util.h"

namespace {

std::string json_error(const std::string& text, const JsonLimits& limits = {}) {
  try {
    parse_json(text, limits);
  } catch (const JsonError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string metrics_error(const std::string& text, const std::string& name = "m.jsonl") {
  try {
    parse_metrics_text(text, name);
  } catch (const MetricsError& e) {
    return e.what();
  }
  return "(no error)";
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// The text of the element <svg id="ID" ...> ... </svg> (empty when absent).
std::string svg_by_id(const std::string& html, const std::string& id) {
  const size_t start = html.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  const size_t end = html.find("</svg>", start);
  return html.substr(start, end == std::string::npos ? std::string::npos : end + 6 - start);
}

ReportInput sample_input(int world, const std::vector<int>& inspect_steps, bool timeline) {
  ReportInput in;
  in.metrics_name = "run.jsonl";
  in.metrics = parse_metrics_text(report_samples::metrics_file(world, 2, inspect_steps), "run.jsonl");
  if (timeline) {
    in.has_timeline = true;
    in.timeline_name = "run.trace.json";
    in.timeline = parse_timeline_text(report_samples::timeline_file(world, 5), "run.trace.json");
  }
  return in;
}

const char* const kChartIds[] = {"loss-chart", "accuracy-chart", "step-time-chart", "bytes-chart", "layer-norm-chart"};

// ---- JSON ----------------------------------------------------------------------------------------

TEST(Json, ParsesEveryKindOfValue) {
  const JsonValue v =
      parse_json(" {\"a\": [1, -2.5e3, 0.0, true, false, null], \"b\": {\"c\": \"x\\ty\\\"\\\\\\/\"}} \n");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.members.size(), 2u);
  const JsonValue* a = v.find("a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(a->items.size(), 6u);
  EXPECT_EQ(a->items[0].number, 1);
  EXPECT_EQ(a->items[1].number, -2500);
  EXPECT_EQ(a->items[1].text, "-2.5e3");  // numbers keep the token as written
  EXPECT_EQ(a->items[2].text, "0.0");
  EXPECT_TRUE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].kind, JsonValue::Kind::Bool);
  EXPECT_FALSE(a->items[4].boolean);
  EXPECT_EQ(a->items[5].kind, JsonValue::Kind::Null);
  EXPECT_EQ(v.find("b")->find("c")->text, "x\ty\"\\/");
  EXPECT_EQ(v.find("zzz"), nullptr);
  // Strings re-escaped by nlohmann's serializer (a tab as \t, '/' as it is).
  EXPECT_EQ(json_to_text(v), "{\"a\":[1,-2.5e3,0.0,true,false,null],\"b\":{\"c\":\"x\\ty\\\"\\\\/\"}}");
  EXPECT_EQ(json_to_text(parse_json(json_to_text(v))), json_to_text(v));
  EXPECT_EQ(parse_json("18446744073709551615").text, "18446744073709551615");  // integers as written too
  EXPECT_EQ(parse_json("-9223372036854775808").number, -9223372036854775808.0);
}

TEST(Json, UnicodeEscapes) {
  EXPECT_EQ(parse_json("\"\\u00e9\"").text, "\xc3\xa9");
  EXPECT_EQ(parse_json("\"\\u20AC\"").text, "\xe2\x82\xac");
  EXPECT_EQ(parse_json("\"\\ud83d\\ude00\"").text, "\xf0\x9f\x98\x80");  // a surrogate pair
  EXPECT_EQ(parse_json("\"\\u0000\"").text, std::string(1, '\0'));
  EXPECT_EQ(parse_json("\"h\xc3\xa9llo\"").text, "h\xc3\xa9llo");  // raw UTF-8 passes
  const std::string high = "invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF";
  EXPECT_EQ(json_error("\"\\ud83d\""),
            "line 1, column 8: syntax error while parsing value - " + high + "; last read: '\"\\ud83d\"'");
  EXPECT_EQ(json_error("\"a\\ud83dxx\""),
            "line 1, column 9: syntax error while parsing value - " + high + "; last read: '\"a\\ud83dx'");
  EXPECT_EQ(json_error("\"\\ude00\""),
            "line 1, column 7: syntax error while parsing value - invalid string: surrogate U+DC00..U+DFFF must "
            "follow U+D800..U+DBFF; last read: '\"\\ude00'");
  EXPECT_EQ(json_error("\"\\u12G4\""),
            "line 1, column 6: syntax error while parsing value - invalid string: '\\u' must be followed by 4 hex "
            "digits; last read: '\"\\u12G'");
  for (const std::string bad :
       {"\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\""})  // a stray byte, overlong '/', a raw surrogate
    EXPECT_NE(json_error(bad).find("invalid string: ill-formed UTF-8 byte"), std::string::npos) << json_error(bad);
}

// Every message is "line L, column C: reason" with the position counted over the whole input
// (nlohmann's byte position turned into line and column) and the library's reason.
TEST(Json, InvalidInputGivesExactMessages) {
  const std::string value = "syntax error while parsing value - ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "line 1, column 1: " + value + "unexpected end of input; expected '[', '{', or a literal"},
      {"{\"a\":1,}",
       "line 1, column 8: syntax error while parsing object key - unexpected '}'; expected string literal"},
      {"[1 2]", "line 1, column 4: syntax error while parsing array - unexpected number literal; expected ']'"},
      {"{\"a\" 1}",
       "line 1, column 6: syntax error while parsing object separator - unexpected number literal; expected ':'"},
      {"[\n  01]", "line 2, column 4: syntax error while parsing array - unexpected number literal; expected ']'"},
      {"[1.]", "line 1, column 4: " + value + "invalid number; expected digit after '.'; last read: '1.]'"},
      {"1e+", "line 1, column 4: " + value + "invalid number; expected digit after exponent sign; last read: '1e+'"},
      {"1e999", "line 1, column 5: number overflow parsing '1e999'"},
      {"\"abc", "line 1, column 5: " + value + "invalid string: missing closing quote; last read: '\"abc'"},
      {"nul!", "line 1, column 4: " + value + "invalid literal; last read: 'nul!'"},
      {"\"a\x01\"", "line 1, column 3: " + value +
                        "invalid string: control character U+0001 (SOH) must be escaped to \\u0001; last read: "
                        "'\"a<U+0001>'"},
      {"\"\\q\"",
       "line 1, column 3: " + value + "invalid string: forbidden character after backslash; last read: '\"\\q'"},
      {"\"\\\n\"",
       "line 1, column 3: " + value + "invalid string: forbidden character after backslash; last read: '\"\\<U+000A>'"},
      {"{\"a\":1,\"a\":2}", "line 1, column 10: duplicate key \"a\""},
      {"{\"a\\n\\\"\":1,\"a\\n\\\"\":2}", "line 1, column 18: duplicate key \"a\\n\\\"\""},
      {"[1] x", "line 1, column 5: " + value + "invalid literal; last read: '1] x'; expected end of input"},
      {"{\n\"a\":\n@}", "line 3, column 1: " + value + "invalid literal; last read: '\"a\":<U+000A>@'"},
      {"[1,", "line 1, column 4: " + value + "unexpected end of input; expected '[', '{', or a literal"},
  };
  for (const auto& c : cases) EXPECT_EQ(json_error(c.first), c.second) << "input: " << c.first;
  // A long token is quoted cut short, so the message stays a readable line.
  const std::string long_error = json_error("\"" + std::string(5000, 'x'));
  EXPECT_LT(long_error.size(), 300u) << long_error;
  EXPECT_EQ(long_error.find('\n'), std::string::npos);
}

TEST(Json, CutShortInputIsMarkedAtEnd) {
  for (const std::string text : {"{\"a\":", "[1, 2", "\"abc", "{\"a\":[{\"b\":tr", "tru", "1e+"}) {
    try {
      parse_json(text);
      ADD_FAILURE() << text;
    } catch (const JsonError& e) {
      EXPECT_TRUE(e.at_end) << text << ": " << e.what();
    }
  }
  for (const std::string text : {"[1 2]", "nul!", "[1] x"}) {
    try {
      parse_json(text);
      ADD_FAILURE() << text;
    } catch (const JsonError& e) {
      EXPECT_FALSE(e.at_end) << text << ": " << e.what();
    }
  }
}

TEST(Json, DepthAndSizeLimits) {
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_NO_THROW(parse_json(ok));
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_EQ(json_error(deep), "line 1, column 65: nesting deeper than 64 levels");
  // A hostile depth stops at the limit, long before the end of the input.
  EXPECT_EQ(json_error(std::string(1000000, '[')), "line 1, column 65: nesting deeper than 64 levels");
  JsonLimits small;
  small.max_depth = 2;
  small.max_bytes = 16;
  EXPECT_EQ(json_error("[[[1]]]", small), "line 1, column 3: nesting deeper than 2 levels");
  EXPECT_EQ(json_error("[1,2,3,4,5,6,7,8,9]", small), "line 1, column 1: input of 19 bytes is over the limit of 16");
}

// read_json_items: the elements of the top array, or of an object's member, one at a time, each
// with the offset of its first byte.
std::vector<std::pair<std::string, size_t>> items_of(const std::string& text, const std::string& key, bool tolerant,
                                                     JsonItems* result = nullptr) {
  std::vector<std::pair<std::string, size_t>> out;
  ByteSource src(text);
  const JsonItems r = read_json_items(src, key, {}, tolerant, [&](const JsonValue& v, size_t at) {
    out.push_back({json_to_text(v), at});
  });
  if (result) *result = r;
  return out;
}

TEST(Json, ItemsAreStreamedWithTheirOffsets) {
  using Items = std::vector<std::pair<std::string, size_t>>;
  EXPECT_EQ(items_of("[ {\"a\":1} ,\n 3, \"s\", [2]]", "", false),
            (Items{{"{\"a\":1}", 2}, {"3", 13}, {"\"s\"", 16}, {"[2]", 21}}));
  JsonItems r;
  EXPECT_EQ(items_of("{\"x\":[1,[2]],\"events\":[{\"b\":2}],\"y\":{}}", "events", false, &r),
            (Items{{"{\"b\":2}", 23}}));
  EXPECT_TRUE(r.found);
  EXPECT_EQ(items_of("{\"x\":1}", "events", false, &r), Items{});
  EXPECT_FALSE(r.found);
  EXPECT_THROW(items_of("{\"events\":[],\"events\":[]}", "events", false), JsonError);
  // A killed writer's array: no ']' after an item or a comma, a last item cut short, a comma
  // before the ']'. Only when tolerant.
  for (const std::string text : {"[{\"a\":1},", "[{\"a\":1}", "[{\"a\":1},\n{\"b\":", "[{\"a\":1}, ]\n"}) {
    EXPECT_EQ(items_of(text, "", true, &r), (Items{{"{\"a\":1}", 1}})) << text;
    EXPECT_EQ(r.cut_short, text.back() != '\n') << text;
    EXPECT_THROW(items_of(text, "", false), JsonError) << text;
  }
  try {
    items_of("[{\"a\":1}, ]\n x", "", true);
    ADD_FAILURE();
  } catch (const JsonError& e) {
    EXPECT_STREQ(e.what(), "line 2, column 2: unexpected text after the closing ']'");
  }
}

// ---- metrics reader -----------------------------------------------------------------------------

TEST(MetricsReader, ReadsAGoodFile) {
  const Metrics m = parse_metrics_text(report_samples::metrics_file(4, 2, {0, 100}), "run.jsonl");
  EXPECT_EQ(m.header.version, 1);
  EXPECT_EQ(m.header.world_size, 4);
  EXPECT_EQ(m.header.backend, "gloo");
  EXPECT_EQ(m.header.algorithm, "ring");
  EXPECT_EQ(m.header.hosts, (std::vector<std::string>{"hpc01", "hpc01", "hpc03", "hpc03"}));
  ASSERT_FALSE(m.header.flags.empty());
  EXPECT_EQ(m.header.flags[0], std::make_pair(std::string("batch_size"), std::string("64")));
  EXPECT_EQ(m.header.flags.back(), std::make_pair(std::string("gradient_predivide_factor"), std::string("1.0")));
  EXPECT_EQ(m.header.versions[0], std::make_pair(std::string("baresgd"), std::string("0.3.0")));
  EXPECT_EQ(m.steps.size(), 2u * 24u * 4u);  // 2 epochs x 24 logged steps x 4 ranks
  EXPECT_EQ(m.steps[5].rank, 1);
  EXPECT_EQ(m.steps[5].step, 10);
  EXPECT_EQ(m.steps[5].batch, 10);
  EXPECT_EQ(m.steps[5].allreduce_bytes, 87360);
  EXPECT_EQ(m.tests.size(), 2u);
  EXPECT_EQ(m.tests[1].epoch, 2);
  EXPECT_EQ(m.inspects.size(), 2u * 4u * 8u);  // 2 steps x 4 ranks x 8 layers
  EXPECT_EQ(m.inspects[0].layer, "conv1.weight");
  EXPECT_TRUE(m.has_summary);
  EXPECT_EQ(m.summary.world_size, 4);
  EXPECT_DOUBLE_EQ(m.summary.comm_share, 0.12);
  EXPECT_TRUE(m.warnings.empty());
}

TEST(MetricsReader, FileThatIsNotOursIsNamed) {
  const std::string msg = "t.json: not a baresgd metrics file (first line is not its header)";
  EXPECT_EQ(metrics_error("{\"traceEvents\":[]}\n", "t.json"), msg);
  EXPECT_EQ(metrics_error("epoch,loss\n1,2.3\n", "t.json"), msg);
  EXPECT_EQ(metrics_error("", "t.json"), msg);
  EXPECT_EQ(metrics_error("{\"type\":\"header\",\"format\":\"other\"}\n", "t.json"), msg);
  EXPECT_EQ(metrics_error("{\"type\":\"step\",\"format\":\"baresgd-metrics\"}\n", "t.json"), msg);
  // Ours, but a version this reader does not know.
  std::string h = report_samples::header_line(1, {"a"});
  h.replace(h.find("\"version\":1"), 11, "\"version\":2");
  EXPECT_EQ(metrics_error(h, "t.json"),
            "t.json:1: header record: format version 2 is not supported (this report reads version 1)");
}

TEST(MetricsReader, BadLineIsNamedByFileAndLine) {
  const std::string head = report_samples::header_line(2, {"a", "b"});
  const std::string step = report_samples::step_lines(2, 1, 0, 0);  // two lines
  EXPECT_EQ(metrics_error(head + step + "{\"type\":\"step\",\"epoch\":1 oops}\n"),
            "m.jsonl:4: not JSON: column 26: syntax error while parsing object - invalid literal; last read: '1 o'; "
            "expected '}'");
  EXPECT_EQ(metrics_error(head + "[1,2]\n"), "m.jsonl:2: not a metrics record (expected a JSON object)");
  EXPECT_EQ(metrics_error(head + "{\"epoch\":1}\n"), "m.jsonl:2: record has no \"type\" string");
  std::string no_loss = step.substr(0, step.find('\n') + 1);
  no_loss.replace(no_loss.find("\"loss\""), 6, "\"lost\"");
  EXPECT_EQ(metrics_error(head + no_loss), "m.jsonl:2: step record: field \"loss\" is missing");
  std::string bad_rank = step.substr(0, step.find('\n') + 1);
  bad_rank.replace(bad_rank.find("\"rank\":0"), 8, "\"rank\":7");
  EXPECT_EQ(metrics_error(head + bad_rank), "m.jsonl:2: step record: rank 7 is outside world size 2");
  EXPECT_EQ(metrics_error(head + "{\"type\":\"test\",\"epoch\":1.5,\"step\":3,\"loss\":1,\"accuracy\":0.5}\n"),
            "m.jsonl:2: test record: field \"epoch\" is not an integer (1.5)");
  EXPECT_EQ(metrics_error(head + "{\"type\":\"test\",\"epoch\":1,\"step\":3,\"loss\":1,\"accuracy\":95.1}\n"),
            "m.jsonl:2: test record: accuracy 95.1 is outside [0,1]");
  EXPECT_EQ(metrics_error(head + head), "m.jsonl:2: a second header record");
  std::string hosts = report_samples::header_line(2, {"a"});
  EXPECT_EQ(metrics_error(hosts), "m.jsonl:1: header record: \"hosts\" names 1 hosts for world size 2");
  std::string sum = report_samples::inspect_lines(2, 0).substr(0, report_samples::inspect_lines(2, 0).find('\n') + 1);
  sum.replace(sum.find("\"param_checksum\":\"") + 18, 8, "xyz");
  EXPECT_EQ(metrics_error(head + sum), "m.jsonl:2: inspect record: param_checksum \"xyz\" is not 8 hex digits");
}

TEST(MetricsReader, UnknownTypesAndFieldsAreIgnored) {
  const std::string head = report_samples::header_line(2, {"a", "b"});
  std::string step = report_samples::step_lines(2, 1, 0, 0);
  step.insert(1, "\"future_field\":[1,{\"x\":2}],");
  const Metrics m = parse_metrics_text(head + step + "{\"type\":\"histogram\",\"bins\":[1,2]}\n\n", "m");
  EXPECT_EQ(m.steps.size(), 2u);
  EXPECT_FALSE(m.has_summary);
}

TEST(MetricsReader, CutShortLastLineOfAKilledRunIsAWarning) {
  const std::string head = report_samples::header_line(2, {"a", "b"});
  const std::string step = report_samples::step_lines(2, 1, 0, 0);
  const Metrics m = parse_metrics_text(head + step + "{\"type\":\"step\",\"epoch\":1,\"ba", "m.jsonl");
  EXPECT_EQ(m.steps.size(), 2u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0], "m.jsonl:4: last line is cut short (a killed run?); ignored");
  // The same text followed by a newline is a whole line, so it is an error.
  EXPECT_EQ(metrics_error(head + step + "{\"type\":\"step\",\"epoch\":1,\"ba\n"),
            "m.jsonl:4: not JSON: column 29: syntax error while parsing object key - invalid string: missing closing "
            "quote; last read: '\"ba'; expected string literal");
}

TEST(MetricsReader, UnreadableFileIsNamed) {
  try {
    read_metrics_file("/nonexistent/run.jsonl");
    ADD_FAILURE();
  } catch (const MetricsError& e) {
    EXPECT_STREQ(e.what(), "cannot read /nonexistent/run.jsonl: No such file or directory");
  }
  try {
    read_metrics_file("/tmp");
    ADD_FAILURE();
  } catch (const MetricsError& e) {
    EXPECT_STREQ(e.what(), "cannot read /tmp: it is a directory, not a regular file");
  }
}

// ---- timeline reader ----------------------------------------------------------------------------

TEST(ReportTimeline, KilledRunsArrayIsRead) {
  const std::string body = report_samples::timeline_file(2, 3);  // ends in ",\n" and no ']'
  Timeline t = parse_timeline_text(body, "t.json");
  EXPECT_TRUE(t.cut_short);
  EXPECT_EQ(t.slices.size(), 2u * 3u * 5u);
  EXPECT_EQ(t.process_names.at(1), "rank 1 @ hpc03");
  // Cut inside the last event: the events before it are kept.
  t = parse_timeline_text(body + "{\"ph\":\"X\",\"na", "t.json");
  EXPECT_TRUE(t.cut_short);
  EXPECT_EQ(t.slices.size(), 30u);
  // Closed properly (after the writer's trailing comma, too).
  t = parse_timeline_text(body + "]\n", "t.json");
  EXPECT_FALSE(t.cut_short);
  EXPECT_EQ(t.slices.size(), 30u);
  const std::vector<ProcessSummary> s = summarize_timeline(t);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].label, "rank 0 @ hpc01");
  EXPECT_EQ(s[0].slices, 15u);
  EXPECT_EQ(s[0].by_name[0].name, "backward");  // the longest slice name first
  EXPECT_EQ(s[0].by_name[0].count, 3u);
}

TEST(ReportTimeline, ObjectFormAndBeginEndPairs) {
  const Timeline t = parse_timeline_text(
      "{\"traceEvents\":[{\"ph\":\"B\",\"pid\":3,\"tid\":1,\"name\":\"allreduce\",\"ts\":10},"
      "{\"ph\":\"E\",\"pid\":3,\"tid\":1,\"ts\":25},{\"ph\":\"B\",\"pid\":3,\"tid\":1,\"name\":\"open\",\"ts\":30},"
      "{\"ph\":\"s\",\"pid\":3,\"id\":1}],\"displayTimeUnit\":\"ms\"}",
      "t.json");
  ASSERT_EQ(t.slices.size(), 1u);
  EXPECT_EQ(t.slices[0].name, "allreduce");
  EXPECT_EQ(t.slices[0].dur_us, 15);
  EXPECT_EQ(t.unclosed, 1u);
  EXPECT_EQ(t.events, 4u);
  EXPECT_EQ(summarize_timeline(t)[0].label, "pid 3");
}

TEST(ReportTimeline, NotATraceIsNamed) {
  auto error = [](const std::string& text) {
    try {
      parse_timeline_text(text, "t.json");
    } catch (const TimelineError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error("hello"), "t.json: not a trace file (expected a JSON array or an object with \"traceEvents\")");
  EXPECT_EQ(error("[{\"ph\":\"X\"} {\"ph\":\"X\"}]"),
            "t.json: not a trace file: line 1, column 13: syntax error while parsing array - unexpected '{'; expected "
            "']'");
  EXPECT_EQ(error("[{\"ph\":\"X\"}, 3]"), "t.json: line 1, column 14: a trace event that is not a JSON object");
  EXPECT_EQ(error("{\"a\":1}"), "t.json: not a trace file: the object has no \"traceEvents\" array");
  EXPECT_EQ(error("[{\"ph\":\"X\",}]"),
            "t.json: not a trace file: line 1, column 12: syntax error while parsing object key - unexpected '}'; "
            "expected string literal");
  EXPECT_EQ(error("[] x"),
            "t.json: not a trace file: line 1, column 4: syntax error while parsing value - invalid literal; last "
            "read: '[] x'; expected end of input");
  EXPECT_EQ(error("[{\"ph\":\"X\"},\n ] x"),
            "t.json: not a trace file: line 2, column 4: unexpected text after the closing ']'");
  EXPECT_EQ(error("{\"traceEvents\":[{},\n 7]}"), "t.json: line 2, column 2: a trace event that is not a JSON object");
}

// ---- the page -------------------------------------------------------------------------------------

TEST(Report, HtmlHasEveryChartAndOnePolylinePerRank) {
  const std::string html = build_report_html(sample_input(4, {0, 100}, true));
  for (const char* id : kChartIds) {
    EXPECT_EQ(count(html, std::string("id=\"") + id + "\""), 1u) << id;
    const std::string svg = svg_by_id(html, id);
    ASSERT_FALSE(svg.empty()) << id;
    EXPECT_GE(count(svg, "class=\"tick y-tick\""), 2u) << id << ": an axis with tick labels";
  }
  const std::string loss = svg_by_id(html, "loss-chart");
  EXPECT_EQ(count(loss, "<polyline "), 4u);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(count(loss, "class=\"rank-line\" data-rank=\"" + std::to_string(r) + "\""), 1u) << r;
  EXPECT_EQ(count(loss, "class=\"legend-item\""), 4u);
  EXPECT_NE(loss.find("rank 2 @ hpc03"), std::string::npos);
  // Stacked bars: 5 parts for each of 4 ranks; a bar per logged step; a bar per (step, layer, rank).
  EXPECT_EQ(count(svg_by_id(html, "step-time-chart"), "class=\"bar part-"), 20u);  // 4 ranks x 5 parts
  EXPECT_EQ(count(svg_by_id(html, "bytes-chart"), "class=\"bar bytes-bar\""), 48u);
  // The arrival strip: a cell per (logged step, rank); rank 3 (0.6 ms after rank 0) is named last.
  EXPECT_EQ(count(svg_by_id(html, "arrival-strip"), "class=\"arrival\""), 4u * 48u);
  EXPECT_NE(html.find("<p id=\"last-to-arrive\" data-rank=\"3\"><strong>Rank 3 arrived last most often</strong>: at "
                      "48 of 48 logged steps"),
            std::string::npos);
  EXPECT_EQ(count(svg_by_id(html, "layer-norm-chart"), "class=\"bar layer-bar\""), 2u * 8u * 4u);
  EXPECT_EQ(count(svg_by_id(html, "accuracy-chart"), "<circle "), 2u);
  EXPECT_NE(html.find("id=\"timeline-summary\""), std::string::npos);
  EXPECT_NE(html.find("identical on every rank"), std::string::npos);
  EXPECT_NE(html.find("batch_size=64"), std::string::npos);
  EXPECT_NE(html.find("hpc01: ranks 0-1; hpc03: ranks 2-3"), std::string::npos);
}

TEST(Report, NothingExternalInThePage) {
  const std::string html = build_report_html(sample_input(4, {0}, true));
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(count(html, "<script"), 1u);
}

TEST(Report, ChartsOnlyFromRecordsThatExist) {
  const std::string html = build_report_html(sample_input(3, {}, false));
  EXPECT_EQ(html.find("id=\"layer-norm-chart\""), std::string::npos);
  EXPECT_NE(html.find("no inspect records"), std::string::npos);
  EXPECT_NE(html.find("no timeline file given"), std::string::npos);
  EXPECT_EQ(count(svg_by_id(html, "loss-chart"), "<polyline "), 3u);
  // A header alone: no chart at all, a sentence for each.
  ReportInput bare;
  bare.metrics_name = "h.jsonl";
  bare.metrics = parse_metrics_text(report_samples::header_line(2, {"a", "b"}), "h.jsonl");
  const std::string empty = build_report_html(bare);
  EXPECT_EQ(count(empty, "<svg"), 0u);
  EXPECT_NE(empty.find("no step records"), std::string::npos);
  EXPECT_NE(empty.find("no test records"), std::string::npos);
  EXPECT_NE(empty.find("no summary record"), std::string::npos);
}

TEST(Report, TextFromTheFilesIsEscaped) {
  std::string text = report_samples::metrics_file(2, 1, {0});
  const std::string evil = "<script>alert(1)</script>&\\\"";
  text.replace(text.find("\"hpc01\""), 7, "\"" + evil + "\"");
  ReportInput in;
  in.metrics_name = "a<b>.jsonl";
  in.metrics = parse_metrics_text(text, in.metrics_name);
  const std::string html = build_report_html(in);
  EXPECT_EQ(count(html, "<script"), 1u);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b&gt;.jsonl"), std::string::npos);
}

TEST(Report, ChecksumsThatDifferAreShown) {
  std::string text = report_samples::metrics_file(2, 1, {0});
  const size_t at = text.find("\"rank\":1,\"layer\":\"fc1.weight\"");
  const size_t sum = text.find("\"param_checksum\":\"", at) + 18;
  text.replace(sum, 8, "00000000");
  ReportInput in;
  in.metrics = parse_metrics_text(text, "m");
  const std::string html = build_report_html(in);
  EXPECT_NE(html.find("differ between ranks at 1 (step, layer) pairs: step 0 fc1.weight"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"mismatch\""), 1u);
}

// ---- the command ---------------------------------------------------------------------------------

std::string report_bin() { return testutil::env_or("BARESGD_REPORT", "./report"); }

struct Files {
  std::string dir, metrics, timeline, html;
};

Files sample_files(int world, const std::vector<int>& inspect_steps) {
  Files f;
  f.dir = testutil::make_temp_dir("report");
  f.metrics = f.dir + "/run.jsonl";
  f.timeline = f.dir + "/run.trace.json";
  f.html = f.dir + "/report.html";
  testutil::write_file(f.metrics, report_samples::metrics_file(world, 3, inspect_steps));
  testutil::write_file(f.timeline, report_samples::timeline_file(world, 20));
  return f;
}

TEST(Report, CommandWritesThePage) {
  const Files f = sample_files(4, {0, 100});
  const testutil::RunResult r = testutil::run(report_bin() + " " + f.metrics + " " + f.timeline + " -o " + f.html);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string html = testutil::read_file(f.html);
  for (const char* id : kChartIds) EXPECT_NE(svg_by_id(html, id), "") << id;
  EXPECT_NE(html.find("id=\"timeline-summary\""), std::string::npos);
  testutil::run("rm -rf '" + f.dir + "'");
}

TEST(Report, CommandErrorsNameTheFile) {
  const Files f = sample_files(2, {});
  const std::string bin = report_bin();
  testutil::RunResult r = testutil::run(bin + " /nonexistent/m.jsonl -o " + f.html);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "report: cannot read /nonexistent/m.jsonl: No such file or directory\n");
  r = testutil::run(bin + " " + f.timeline + " -o " + f.html);  // a trace given as the metrics file
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "report: " + f.timeline + ": not a baresgd metrics file (first line is not its header)\n");
  r = testutil::run(bin + " " + f.metrics + " " + f.metrics + " -o " + f.html);  // metrics as the trace
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("report: " + f.metrics + ": not a trace file"), 0u) << r.err;
  r = testutil::run(bin + " " + f.metrics + " -o /nonexistent/dir/report.html");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "report: /nonexistent/dir/report.html: report output cannot be created: No such file or directory\n");
  EXPECT_EQ(count(r.err, "\n"), 1u);
  testutil::run("rm -rf '" + f.dir + "'");
}

// A FIFO (with no writer: opening it to read would block), a directory and a device are refused
// by what they are, with one line, as the metrics file and as the timeline; nothing hangs (each
// run has a deadline, and a hang fails the test).
TEST(Report, NonRegularInputsAreRefusedWithOneLine) {
  const Files f = sample_files(2, {});
  const std::string fifo = f.dir + "/run.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {fifo, "a FIFO"}, {f.dir, "a directory"}, {"/dev/null", "a character device"}};
  for (const auto& in : inputs) {
    const std::string want = "report: cannot read " + in.first + ": it is " + in.second + ", not a regular file\n";
    for (const std::string& args : {in.first + " -o " + f.html, f.metrics + " " + in.first + " -o " + f.html}) {
      const testutil::RunResult r = testutil::run(report_bin() + " " + args, 60);
      ASSERT_FALSE(r.timed_out) << "report hung on " << args;
      EXPECT_EQ(r.status, 1) << args;
      EXPECT_EQ(r.err, want) << args;
    }
  }
  testutil::run("rm -rf '" + f.dir + "'");
}

// Bad JSON in an input file is named by file, line and column.
TEST(Report, BadJsonIsNamedByFileLineAndColumn) {
  const Files f = sample_files(2, {});
  std::string trace = testutil::read_file(f.timeline);
  const size_t third = trace.find('\n', trace.find('\n') + 1) + 1;  // the start of line 3
  trace.insert(third + 6, "@");
  testutil::write_file(f.timeline, trace);
  testutil::RunResult r = testutil::run(report_bin() + " " + f.metrics + " " + f.timeline + " -o " + f.html);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("report: " + f.timeline + ": not a trace file: line 3, column 7: syntax error"), 0u) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  std::string metrics = testutil::read_file(f.metrics);
  metrics.insert(metrics.find('\n') + 1 + 7, "}");  // line 2, column 8: {"type"}:"step",...
  testutil::write_file(f.metrics, metrics);
  r = testutil::run(report_bin() + " " + f.metrics + " -o " + f.html);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("report: " + f.metrics + ":2: not JSON: column 8: syntax error"), 0u) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  testutil::run("rm -rf '" + f.dir + "'");
}

TEST(Report, CommandUsageErrorsExitTwo) {
  const std::string bin = report_bin();
  testutil::RunResult r = testutil::run(bin);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "report: no METRICS file given (see report --help)\n");
  r = testutil::run(bin + " m.jsonl");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "report: -o OUTPUT is required (see report --help)\n");
  r = testutil::run(bin + " m.jsonl --colour -o x.html");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "report: unknown option --colour (see report --help)\n");
  r = testutil::run(bin + " a b c -o x.html");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "report: too many inputs: c (give METRICS and at most one TIMELINE) (see report --help)\n");
  r = testutil::run(bin + " m.jsonl -o");
  EXPECT_EQ(r.status, 2);
  r = testutil::run(bin + " --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("usage: report METRICS [TIMELINE] -o OUTPUT.html"), std::string::npos);
}

// ---- in a real browser ---------------------------------------------------------------------------

const char* const kChromium = "/usr/bin/chromium";

struct BrowserRun {
  int status = -1;
  bool timed_out = false;
  std::string out, err;
};

// Runs headless chromium on a file with a fresh profile; killed (its process group, by the pid
// run_processes started) if it takes longer than 90 s.
BrowserRun run_chromium(const std::string& page, const std::vector<std::string>& mode) {
  const std::string profile = testutil::make_temp_dir("chromium-profile");
  std::vector<std::string> argv = {kChromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--user-data-dir=" + profile,
                                   "--enable-logging=stderr",
                                   "--v=0"};
  argv.insert(argv.end(), mode.begin(), mode.end());
  argv.push_back("file://" + page);
  const testutil::RunAll all = testutil::run_processes({{argv, testutil::current_environment()}}, 90);
  testutil::run("rm -rf '" + profile + "'");
  BrowserRun b;
  b.status = all.procs[0].status;
  b.timed_out = all.timed_out;
  b.out = all.procs[0].out;
  b.err = all.procs[0].err;
  return b;
}

// The page's console messages and uncaught exceptions, as chromium logs them to stderr. The
// report itself writes nothing to the console, so every such line is a failure.
std::vector<std::string> console_errors(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) lines.push_back(line);
  return lines;
}

#define SKIP_WITHOUT_CHROMIUM()                                                                      \
  do {                                                                                               \
    struct stat st_ {};                                                                              \
    if (::stat(kChromium, &st_) != 0) {                                                              \
      std::printf("skipped: %s is absent (Debian package chromium; .ci/install-deps)\n", kChromium); \
      BARESGD_SKIP(kChromium << " is absent");                                                       \
    }                                                                                                \
  } while (0)

TEST(ReportBrowser, ChromiumBuildsTheChartsWithNoConsoleErrors) {
  SKIP_WITHOUT_CHROMIUM();
  const Files f = sample_files(4, {0, 100});
  ASSERT_EQ(testutil::run(report_bin() + " " + f.metrics + " " + f.timeline + " -o " + f.html).status, 0);
  const BrowserRun b = run_chromium(f.html, {"--dump-dom"});
  ASSERT_FALSE(b.timed_out) << "chromium hung; stderr:\n" << b.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(console_errors(b.err), std::vector<std::string>{}) << b.err;
  // The DOM as the browser built it: every chart, its polylines and bars, and the page's script ran.
  const std::string& dom = b.out;
  for (const char* id : kChartIds) EXPECT_NE(svg_by_id(dom, id), "") << id << " missing from the DOM";
  EXPECT_EQ(count(svg_by_id(dom, "loss-chart"), "<polyline "), 4u);
  EXPECT_EQ(count(svg_by_id(dom, "step-time-chart"), "<rect x="), 20u + 5u);  // bars + legend swatches
  EXPECT_NE(dom.find("data-report-ready=\"1\""), std::string::npos) << "the page's script did not finish";
  // The lane chart of one step: a lane group per rank, its two tracks' lanes, five slices per rank.
  const std::string lanes = svg_by_id(dom, "timeline-lanes");
  ASSERT_NE(lanes, "") << "timeline-lanes missing from the DOM";
  EXPECT_EQ(count(lanes, "<g class=\"rank-lanes\""), 4u);
  EXPECT_EQ(count(lanes, "<rect class=\"lane\""), 8u);
  EXPECT_EQ(count(lanes, "class=\"slice\""), 20u);
  testutil::run("rm -rf '" + f.dir + "'");
}

TEST(ReportBrowser, DeliberateScriptErrorIsReported) {
  SKIP_WITHOUT_CHROMIUM();
  // The same check on a page whose script throws must fail: this is what proves it can.
  const Files f = sample_files(2, {});
  ASSERT_EQ(testutil::run(report_bin() + " " + f.metrics + " -o " + f.html).status, 0);
  std::string html = testutil::read_file(f.html);
  html.insert(html.find("</body>"), "<script>throw new Error('deliberate report failure');</script>\n");
  const std::string broken = f.dir + "/broken.html";
  testutil::write_file(broken, html);
  const BrowserRun b = run_chromium(broken, {"--dump-dom"});
  ASSERT_FALSE(b.timed_out);
  const std::vector<std::string> errors = console_errors(b.err);
  ASSERT_EQ(errors.size(), 1u) << b.err;
  EXPECT_NE(errors[0].find("Uncaught Error: deliberate report failure"), std::string::npos) << errors[0];
  testutil::run("rm -rf '" + f.dir + "'");
}

// Every section of the page, each kind of record present (steps, tests, --inspect, Adasum, the
// summary, a timeline), and the --section timeline page: chromium builds them all with no console
// message (the page logs none, so any is a script error or an SVG attribute chromium rejects), and
// every <section> and heading of the page is in the DOM it built.
TEST(ReportBrowser, EverySectionLoadsWithNoConsoleErrors) {
  SKIP_WITHOUT_CHROMIUM();
  const Files f = sample_files(4, {0, 100});
  std::string metrics = testutil::read_file(f.metrics);
  std::string adasum;
  for (int r = 0; r < 4; ++r)
    adasum += "{\"type\":\"adasum\",\"step\":10,\"rank\":" + std::to_string(r) +
              ",\"level\":0,\"layer\":\"fc1.weight\",\"a_coef\":0.5,\"b_coef\":0.5}\n";
  metrics.insert(metrics.find('\n') + 1, adasum);
  testutil::write_file(f.metrics, metrics);
  for (const std::string& extra : {std::string(), std::string(" --section timeline")}) {
    ASSERT_EQ(testutil::run(report_bin() + " " + f.metrics + " " + f.timeline + extra + " -o " + f.html).status, 0);
    const std::string html = testutil::read_file(f.html);
    if (extra.empty())
      ASSERT_NE(html.find("id=\"adasum-table\""), std::string::npos) << "the Adasum section is missing";
    const BrowserRun b = run_chromium(f.html, {"--dump-dom"});
    ASSERT_FALSE(b.timed_out) << "chromium hung; stderr:\n" << b.err;
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(console_errors(b.err), std::vector<std::string>{}) << extra << "\n" << b.err;
    const std::string& dom = b.out;
    EXPECT_GE(count(html, "<section"), extra.empty() ? 8u : 2u) << extra;
    EXPECT_EQ(count(dom, "<section"), count(html, "<section")) << extra;
    const std::regex heading("<h[23][^>]*>([^<]*)</h[23]>");
    size_t headings = 0;
    for (std::sregex_iterator it(html.begin(), html.end(), heading), end; it != end; ++it, ++headings)
      EXPECT_NE(dom.find((*it)[1].str()), std::string::npos) << "heading missing from the DOM: " << (*it)[1].str();
    EXPECT_GE(headings, extra.empty() ? 8u : 2u) << extra;
    EXPECT_EQ(count(dom, "<svg"), count(html, "<svg")) << extra;
    EXPECT_NE(dom.find("data-report-ready=\"1\""), std::string::npos) << extra << ": the page's script did not finish";
  }
  testutil::run("rm -rf '" + f.dir + "'");
}

// The console check catches what it is for: a console.error call and an SVG attribute chromium
// rejects each give one line (the page's own script errors: DeliberateScriptErrorIsReported).
TEST(ReportBrowser, DeliberateConsoleAndSvgErrorsAreReported) {
  SKIP_WITHOUT_CHROMIUM();
  const Files f = sample_files(2, {});
  ASSERT_EQ(testutil::run(report_bin() + " " + f.metrics + " -o " + f.html).status, 0);
  std::string html = testutil::read_file(f.html);
  html.insert(html.find("</body>"),
              "<svg width=\"9\" height=\"9\"><rect width=\"-1\" height=\"1\"/></svg>\n"
              "<script>console.error('deliberate console error');</script>\n");
  const std::string broken = f.dir + "/broken.html";
  testutil::write_file(broken, html);
  const BrowserRun b = run_chromium(broken, {"--dump-dom"});
  ASSERT_FALSE(b.timed_out);
  const std::vector<std::string> errors = console_errors(b.err);
  ASSERT_EQ(errors.size(), 2u) << b.err;
  EXPECT_NE(errors[0].find("<rect> attribute width: A negative value is not valid"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("deliberate console error"), std::string::npos) << errors[1];
  testutil::run("rm -rf '" + f.dir + "'");
}

// "Collapse arrows" at W = 8 (issue 24): the ring's 112 arrows in the lane chart give way to its 14
// algorithm steps' bands, each labelled with its rule. The page opened with #collapse starts
// collapsed, as a click on the box would leave it; the DOM chromium built says what is shown.
TEST(ReportBrowser, CollapseArrowsLeavesOneLabelledBandPerRingStepAtEightRanks) {
  SKIP_WITHOUT_CHROMIUM();
  const Files f = sample_files(8, {});
  testutil::write_file(f.timeline, algorithm_trace::trace_of(AllreduceAlgorithm::kRing, 8));
  ASSERT_EQ(
      testutil::run(report_bin() + " " + f.metrics + " " + f.timeline + " --section timeline -o " + f.html).status, 0);
  const std::string html = testutil::read_file(f.html);
  ASSERT_NE(html.find("id=\"collapse-arrows\""), std::string::npos) << "no collapse control on the page";
  for (const std::string& hash : {std::string(), std::string("#collapse")}) {
    const BrowserRun b = run_chromium(f.html + hash, {"--dump-dom"});
    ASSERT_FALSE(b.timed_out) << "chromium hung; stderr:\n" << b.err;
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(console_errors(b.err), std::vector<std::string>{}) << b.err;
    const std::string& dom = b.out;
    ASSERT_NE(dom.find("data-report-ready=\"1\""), std::string::npos) << hash << ": the page's script did not finish";
    const std::string lanes = svg_by_id(dom, "timeline-lanes");
    ASSERT_NE(lanes, "") << "timeline-lanes missing from the DOM";
    const bool collapsed = !hash.empty();
    // Arrows: every rank sends one message per step, 8 x 14; collapsed, none of them is shown.
    EXPECT_EQ(count(lanes, "<g class=\"msg\""), collapsed ? 0u : 112u) << hash;
    EXPECT_EQ(count(lanes, "<g class=\"msg collapsed\""), collapsed ? 112u : 0u) << hash;
    EXPECT_EQ(lanes.find("class=\"chart collapsed\"") != std::string::npos, collapsed) << hash;
    // The small multiples keep their arrows: collapsing is the lane chart's.
    EXPECT_EQ(count(svg_by_id(dom, "algorithm-steps"), "<g class=\"msg\""), 112u) << hash;
    // The bands: one per algorithm step, in order, each with its rule.
    EXPECT_EQ(count(lanes, "<g class=\"step-band\""), 14u) << hash;
    EXPECT_NE(lanes.find(">ring reduce-scatter 1/7: rank r \xe2\x86\x92 r+1 sends chunk r, 10920 B each</text>"),
              std::string::npos);
    EXPECT_NE(
        lanes.find(">ring reduce-scatter 2/7: rank r \xe2\x86\x92 r+1 sends chunk (r-1) mod 8, 10920 B each</text>"),
        std::string::npos);
    EXPECT_NE(lanes.find(">ring allgather 7/7: rank r \xe2\x86\x92 r+1 sends chunk (r+3) mod 8, 10920 B each</text>"),
              std::string::npos);
  }
  // The collapse is what the CSS hides: a screenshot of the collapsed page differs from the other.
  const std::string open_png = f.dir + "/open.png", shut_png = f.dir + "/collapsed.png";
  const BrowserRun a = run_chromium(f.html, {"--screenshot=" + open_png, "--window-size=1200,1400"});
  const BrowserRun c = run_chromium(f.html + "#collapse", {"--screenshot=" + shut_png, "--window-size=1200,1400"});
  ASSERT_FALSE(a.timed_out);
  ASSERT_FALSE(c.timed_out);
  EXPECT_NE(testutil::read_file(open_png), testutil::read_file(shut_png)) << "collapsing changed nothing on screen";
  const char* keep = std::getenv("BARESGD_KEEP_COLLAPSED");
  if (keep && *keep) testutil::write_file(keep, testutil::read_file(shut_png));
  testutil::run("rm -rf '" + f.dir + "'");
}

TEST(ReportBrowser, ScreenshotOfThePage) {
  SKIP_WITHOUT_CHROMIUM();
  const Files f = sample_files(4, {0, 100});
  ASSERT_EQ(testutil::run(report_bin() + " " + f.metrics + " " + f.timeline + " -o " + f.html).status, 0);
  const std::string png = f.dir + "/report.png";
  const BrowserRun b = run_chromium(f.html, {"--screenshot=" + png, "--window-size=1200,1600"});
  ASSERT_FALSE(b.timed_out) << b.err;
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(console_errors(b.err), std::vector<std::string>{});
  const std::string bytes = testutil::read_file(png);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(0, 8), "\x89PNG\r\n\x1a\n");
  EXPECT_GT(bytes.size(), 10u * 1024u) << "a near-empty screenshot";
  // Width and height from the IHDR chunk: the window size asked for.
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
           (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
  };
  EXPECT_EQ(be32(16), 1200u);
  EXPECT_EQ(be32(20), 1600u);
  const char* keep = std::getenv("BARESGD_KEEP_SCREENSHOT");
  if (keep && *keep) testutil::write_file(keep, bytes);
  testutil::run("rm -rf '" + f.dir + "'");
}

}  // namespace
