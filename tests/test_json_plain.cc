// Tests for the plain-JSON scanner under read_json_items (reporting/json_plain.h): every input,
// plain or not, well-formed, malformed or cut short, read from text or from a file bigger than the
// reader's 1 MiB buffer, gives exactly what nlohmann's parser alone gives (scan_plain false): the
// same items at the same offsets, the same end (found, cut short), or the same error message.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "reporting/byte_source.h"
#include "reporting/json.h"
#include "reporting/json_plain.h"
#include "reporting/timeline_reader.h"
#include "tests/test_util.h"

namespace {

// Everything read_json_items reports: each item (as JSON text) at its offset, then how it ended
// or its error.
std::string reading(ByteSource& src, bool scan_plain, bool tolerant, size_t max_depth) {
  JsonLimits limits;
  limits.max_depth = max_depth;
  limits.scan_plain = scan_plain;
  std::string out;
  try {
    const JsonItems r = read_json_items(src, "", limits, tolerant, [&](const JsonValue& v, size_t at) {
      out += std::to_string(at) + " " + json_to_text(v) + " " + (v.is_number() ? std::to_string(v.number) : "") + "\n";
    });
    out += "found=" + std::to_string(r.found) + " cut_short=" + std::to_string(r.cut_short);
  } catch (const JsonError& e) {
    out += std::string("error: ") + e.what() + " at_end=" + std::to_string(e.at_end);
  }
  return out;
}

std::string reading_text(const std::string& text, bool scan_plain, bool tolerant, size_t max_depth = 32) {
  ByteSource src(text);
  return reading(src, scan_plain, tolerant, max_depth);
}

// The number leaves of every item reach the reader through JsonValue::number too: compare them
// by their own printing (json_to_text shows the text only).
const std::vector<std::string> kInputs = {
    R"([{"a":1},{"b":"x"}])",
    " [ {\"a\" : 1 } ,\n\t{\"b\":2}\r\n]\n",
    R"([])",
    R"([ ])",
    R"([{}])",
    R"([{},{}])",
    R"([{"a":1},])",
    R"([{"a":1},)",
    R"([{"a":1})",
    R"([{"a":1},{"b":)",
    R"([{"a":1},{"b":tru)",
    R"([{"a":1},{"b":x)",
    R"([{"a":1}] x)",
    R"([{"a":1}])"
    "\n\n",
    R"([{"a":1},] x)",
    R"([{"a":1,"a":2}])",
    R"([{"a":1},{"b":{"c":1,"c":2}}])",
    R"([{"a":"q\"\\\/\b\f\n\r\t"},{"u":"\u00e9\ud83d\ude00"}])",
    "[{\"h\":\"\xc3\xa9\"},{\"i\":1}]",
    "[{\"h\":\"\xff\"},{\"i\":1}]",
    "[{\"a\":\"\x01\"}]",
    R"([{"n":-0,"m":1.50,"e":1E5,"f":2e-3,"g":-0.0,"x":0.1,"neg":-12,"i18":999999999999999999}])",
    R"([{"big":123456789012345678901,"neg_big":-123456789012345678901}])",
    R"([{"i19":1234567890123456789},{"u":18446744073709551615}])",
    R"([{"huge":1e999}])",
    R"([{"tiny":1e-400},{"denormal":4.9e-324}])",
    R"([{"n":01}])",
    R"([{"n":1.}])",
    R"([{"n":-}])",
    R"([{"n":.5}])",
    R"([{"n":1e}])",
    R"([{"n":1}.])",
    R"([{"a":nul}])",
    R"([{"a":truex}])",
    R"([{"a":true,"b":false,"c":null,"d":[1,[2,[]],{}]}])",
    R"([1, "a", null, {"a":1}, [2], true, {"b":2}])",
    R"([{"a":1}{"b":2}])",
    R"([{"a":1},,{"b":2}])",
    R"([{"a":1} , ])",
    R"([{"d":[[[[[[[[[[1]]]]]]]]]]},{"e":1}])",
    R"([{"k":1,})",
    R"([{"k" 1}])",
    R"([{1:1}])",
    R"({"a":1})",
    R"("x")",
    "",
    "[",
    std::string("[{\"a\":1}]\0", 10),
};

TEST(JsonPlain, EveryInputReadsAsTheLibraryReadsIt) {
  for (const std::string& text : kInputs)
    for (bool tolerant : {false, true}) {
      const std::string library = reading_text(text, false, tolerant);
      EXPECT_EQ(reading_text(text, true, tolerant), library) << "input: " << text << " tolerant=" << tolerant;
      // a small depth limit: the scanner must leave what the library refuses to it
      EXPECT_EQ(reading_text(text, true, tolerant, 3), reading_text(text, false, tolerant, 3)) << "input: " << text;
    }
}

// The scanner's own cases: it takes plain objects and gives up (nullptr) on the rest.
TEST(JsonPlain, ScansPlainValuesAndGivesUpOnTheRest) {
  const PlainJsonScanner scan(32);
  JsonValue v;
  const std::string plain = R"({"ph":"X","ts":1.500,"n":-0,"args":{"s":"a\"b","l":[1,true,null]}} )";
  const char* end = plain.data() + plain.size();
  EXPECT_EQ(scan.scan(plain.data(), end, v), end - 1);
  EXPECT_EQ(json_to_text(v), R"({"ph":"X","ts":1.500,"n":0,"args":{"s":"a\"b","l":[1,true,null]}})");
  EXPECT_EQ(v.find("ts")->number, 1.5);
  for (const char* not_plain :
       {R"({"a":"\u0041"} )", "{\"a\":\"\xc3\xa9\"} ", R"({"a":1,"a":2} )", R"({"a":1e999} )",
        R"({"a":12345678901234567890} )", R"({"a":1)", R"({"a":[[[[[[[[1]]]]]]]]} )", R"({"a":01} )"}) {
    JsonValue w;
    EXPECT_EQ(scan.scan(not_plain, not_plain + std::strlen(not_plain), w), nullptr) << not_plain;
  }
}

// A trace file bigger than the 1 MiB read buffer, whose events straddle its refills, with a few
// that are not plain (a \u escape, an event longer than the scanner's 64 KiB window) among the
// plain ones, and one cut short at the end: the file gives what the library gives.
TEST(JsonPlain, AFileBiggerThanTheBufferReadsAsTheLibraryReadsIt) {
  std::string text = "[\n";
  for (int i = 0; i < 50000; ++i) {
    text += "{\"ph\":\"X\",\"name\":\"slice " + std::to_string(i) + "\",\"ts\":" + std::to_string(i) + ".25";
    if (i % 997 == 0) text += ",\"u\":\"\\u00e9\"";
    if (i == 12345) text += ",\"long\":\"" + std::string(100000, 'x') + "\"";
    text += ",\"args\":{\"step\":" + std::to_string(i / 10) + "}},\n";
  }
  text += "{\"ph\":\"X\",\"na";
  ASSERT_GT(text.size(), size_t(3) << 20);  // three refills of the buffer at least
  const std::string dir = testutil::make_temp_dir("jsonplain");
  const std::string path = dir + "/t.json";
  testutil::write_file(path, text);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ByteSource file(fd, text.size(), path);
  const std::string from_file = reading(file, true, true, 32);
  ::close(fd);
  const std::string library = reading_text(text, false, true);
  EXPECT_EQ(from_file, library);
  EXPECT_NE(library.find("found=1 cut_short=1"), std::string::npos);
  EXPECT_NE(library.find("\"slice 49999\""), std::string::npos);
  // and with the killed writer's event made a syntax error instead: the same message
  text.back() = '@';
  EXPECT_EQ(reading_text(text, true, true), reading_text(text, false, true));
  testutil::run("rm -rf '" + dir + "'");
}

// The timeline reader over both readings of a trace the trainer's writer shape: the same slices,
// flows and names.
TEST(JsonPlain, TimelineOfBothReadingsIsTheSame) {
  std::string text = "[\n";
  for (int r = 0; r < 2; ++r) {
    text += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(r) + ",\"args\":{\"name\":\"rank " +
            std::to_string(r) + " @ h\\\"1\"}},\n";
    for (int s = 0; s < 50; ++s) {
      const std::string ts = std::to_string(1000 * s + r) + ".5";
      text += "{\"ph\":\"X\",\"name\":\"ring step\",\"cat\":\"comm\",\"pid\":" + std::to_string(r) +
              ",\"tid\":1000,\"ts\":" + ts + ",\"dur\":10.000,\"args\":{\"step\":" + std::to_string(s) +
              ",\"bytes\":400}},\n";
      text += "{\"ph\":\"s\",\"name\":\"m\",\"cat\":\"allreduce flow\",\"id\":" + std::to_string(s) +
              ",\"pid\":" + std::to_string(r) + ",\"tid\":1000,\"ts\":" + ts + ",\"args\":{\"chunk\":1}},\n";
      text += "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"m\",\"cat\":\"allreduce flow\",\"id\":" + std::to_string(s) +
              ",\"pid\":" + std::to_string(1 - r) + ",\"tid\":1000,\"ts\":" + ts + ",\"args\":{\"chunk\":1}},\n";
    }
  }
  text += "{\"ph\":\"X\",\"name\":\"last\",\"pid\":0,\"tid\":1,\"ts\":1,\"dur\":2}\n]\n";
  const Timeline fast = parse_timeline_text(text, "t.json", true);
  const Timeline slow = parse_timeline_text(text, "t.json", false);
  ASSERT_EQ(fast.slices.size(), 101u);
  ASSERT_EQ(fast.slices.size(), slow.slices.size());
  for (size_t i = 0; i < fast.slices.size(); ++i) {
    EXPECT_EQ(fast.slices[i].name, slow.slices[i].name);
    EXPECT_EQ(fast.slices[i].ts_us, slow.slices[i].ts_us);
    EXPECT_EQ(fast.slices[i].dur_us, slow.slices[i].dur_us);
    EXPECT_EQ(fast.slices[i].step, slow.slices[i].step);
    EXPECT_EQ(fast.slices[i].args, slow.slices[i].args);
  }
  ASSERT_EQ(fast.flows.size(), 100u);
  ASSERT_EQ(fast.flows.size(), slow.flows.size());
  EXPECT_EQ(fast.process_names, slow.process_names);
  EXPECT_EQ(fast.process_names.at(1), "rank 1 @ h\"1");
  EXPECT_EQ(fast.events, slow.events);
}

}  // namespace
