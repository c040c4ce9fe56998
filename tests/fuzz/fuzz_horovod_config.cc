// fuzz_horovod_config: libFuzzer target for horovodrun's --config-file reader
// (launcher/horovod_config.h parse_config_text and config_flags).
//
// Input: the bytes are the file's text. It is read with no flag given on the command line, with
// the flags the first byte picks (bit k-1: every k-th row of launcher/horovod_flags.h's table,
// k = 1..8) and with every flag given.
// Contract checked:
//   - each step returns or throws ConfigError, no other exception, no crash;
//   - an error is one line "f.yaml:LINE: what" with LINE in 1..(lines of the input) and a
//     non-empty what;
//   - parsed entries have a non-empty key of [A-Za-z0-9_-] with at most one '.', a line in
//     1..lines, keys unique, and a null entry has an empty or "~"/"null" value;
//   - config_flags' words are flags of the table that ./launch does not refuse, each followed by
//     as many values as the row takes; none is a flag counted as given; the controller is "",
//     "--gloo" or "--mpi";
//   - with every flag given, no flag words come out (the command line wins over the file);
//   - the words of an accepted file are accepted by ./launch's flag parser (parse_launch_options,
//     with -np 1, the file's controller or --gloo, and a CMD): a value the file lets through never
//     becomes an error without its FILE:LINE.
#include <cstdint>
#include <string>
#include <vector>

#include "launcher/horovod_config.h"
#include "launcher/horovod_flags.h"
#include "launcher/options.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

const char kFile[] = "f.yaml";

int count_lines(const std::string& text) {
  int n = 1;
  for (size_t i = 0; i + 1 < text.size(); ++i) n += text[i] == '\n';
  return n;
}

void check_error(const ConfigError& e, int lines) {
  const std::string m = e.what();
  FUZZ_CHECK(m.find_first_of("\n\r") == std::string::npos);
  const std::string prefix = std::string(kFile) + ":";
  FUZZ_CHECK(m.compare(0, prefix.size(), prefix) == 0);
  size_t k = prefix.size(), digits = 0;
  long line = 0;
  while (k < m.size() && m[k] >= '0' && m[k] <= '9' && digits < 9) line = line * 10 + (m[k++] - '0'), ++digits;
  FUZZ_CHECK(digits > 0 && line >= 1 && line <= lines);
  FUZZ_CHECK(m.compare(k, 2, ": ") == 0 && m.size() > k + 2);
}

void check_entries(const std::vector<ConfigEntry>& entries, int lines) {
  std::vector<std::string> keys;
  for (const ConfigEntry& e : entries) {
    FUZZ_CHECK(!e.key.empty());
    int dots = 0;
    for (char c : e.key) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                c == '.';
      FUZZ_CHECK(ok);
      dots += c == '.';
    }
    FUZZ_CHECK(dots <= 1);
    FUZZ_CHECK(e.line >= 1 && e.line <= lines);
    if (e.null)
      FUZZ_CHECK(e.value.empty() || e.value == "~" || e.value == "null" || e.value == "Null" || e.value == "NULL");
    for (const std::string& k : keys) FUZZ_CHECK(k != e.key);
    keys.push_back(e.key);
  }
}

bool is_given(const std::vector<std::string>& given, const HorovodFlag& f) {
  for (const std::string& g : given)
    if (g == f.names[0]) return true;
  return false;
}

void check_flags(const ConfigFlags& c, const std::vector<std::string>& given) {
  FUZZ_CHECK(c.controller.empty() || c.controller == "--gloo" || c.controller == "--mpi");
  for (size_t i = 0; i < c.args.size();) {
    const HorovodFlag* f = find_horovod_flag(c.args[i]);
    FUZZ_CHECK(f != nullptr);
    FUZZ_CHECK(f->status != FlagStatus::kRefused);
    FUZZ_CHECK(!is_given(given, *f));
    i += 1 + f->values;
    FUZZ_CHECK(i <= c.args.size());
  }
}

void check_accepted_by_launch(const ConfigFlags& c) {
  std::vector<std::string> args = c.args;
  args.insert(args.end(), {"-np", "1", c.controller.empty() ? "--gloo" : c.controller, "true"});
  try {
    parse_launch_options(args, [](const char*) -> const char* { return nullptr; });
  } catch (const UsageError& e) {
    std::fprintf(stderr, "the file's words were refused: %s\n", e.what());
    FUZZ_CHECK(!"config_flags' words are accepted by parse_launch_options");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = count_lines(text);
  std::vector<ConfigEntry> entries;
  try {
    entries = parse_config_text(text, kFile);
  } catch (const ConfigError& e) {
    check_error(e, lines);
    return 0;
  }
  check_entries(entries, lines);
  const std::vector<HorovodFlag>& table = horovod_flags();
  std::vector<std::string> none, some, all;
  const unsigned pick = size ? data[0] : 0;
  for (size_t r = 0; r < table.size(); ++r) {
    all.push_back(table[r].names[0]);
    for (unsigned k = 1; k <= 8; ++k)
      if ((pick >> (k - 1) & 1) && r % k == 0) {
        some.push_back(table[r].names[0]);
        break;
      }
  }
  for (const std::vector<std::string>* given : {&none, &some, &all}) {
    try {
      ConfigFlags c = config_flags(entries, kFile, *given);
      check_flags(c, *given);
      if (given == &none) check_accepted_by_launch(c);
      if (given == &all) FUZZ_CHECK(c.args.empty());
    } catch (const ConfigError& e) {
      check_error(e, lines);
    }
  }
  return 0;
}
