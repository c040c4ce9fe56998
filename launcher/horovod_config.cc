// horovod_config: reading horovodrun's YAML config file and turning its keys into ./launch flags
// (see horovod_config.h).
#include "launcher/horovod_config.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <set>

#include "launcher/horovod_flags.h"
#include "src/parse_int.h"
#include "src/shown_text.h"

namespace {

[[noreturn]] void fail(const std::string& file, int line, const std::string& what) {
  throw ConfigError(shown_text(file) + ":" + std::to_string(line) + ": " + what);
}

bool is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// The text without leading and trailing blanks (a CRLF file's '\r' counts as one).
std::string strip_blanks(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The line without a trailing '#' comment (one that starts the line or follows a blank) and
// blanks; quotes are honoured by parse_scalar, which sees the raw rest.
std::string strip_comment(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) return strip_blanks(s.substr(0, i));
  return strip_blanks(s);
}

// A scalar after "key:": '...' ('' is a quote), "..." (\\ \" \n \t), or plain up to a comment.
void parse_scalar(const std::string& raw, const std::string& file, int line, ConfigEntry* e) {
  std::string s = strip_blanks(raw);
  if (s.empty() || s[0] == '#') {
    e->null = true;
    return;
  }
  char q = s[0];
  if (q == '\'' || q == '"') {
    std::string v;
    size_t i = 1;
    for (;; ++i) {
      if (i >= s.size()) fail(file, line, std::string("unterminated ") + (q == '"' ? "\"" : "'") + " string");
      char c = s[i];
      if (c == q && q == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
        v += '\'';
        ++i;
      } else if (c == q) {
        break;
      } else if (c == '\\' && q == '"') {
        if (++i >= s.size()) fail(file, line, "unterminated \" string");
        const std::string esc = "\\\"nt";
        size_t k = esc.find(s[i]);
        if (k == std::string::npos) fail(file, line, "unsupported escape \\" + shown_text(std::string(1, s[i])));
        v += "\\\"\n\t"[k];
      } else {
        v += c;
      }
    }
    if (!strip_comment(s.substr(i + 1)).empty()) fail(file, line, "text after the closing quote");
    e->value = v;
    e->quoted = true;
    return;
  }
  s = strip_comment(s);
  if (s[0] == '[' || s[0] == '{') fail(file, line, "flow lists and maps are not horovodrun config values");
  if (s[0] == '-' && (s.size() == 1 || s[1] == ' ')) fail(file, line, "lists are not horovodrun config values");
  if (s[0] == '&' || s[0] == '*' || s[0] == '!' || s[0] == '|' || s[0] == '>')
    fail(file, line, "YAML anchors, tags and block scalars are not supported");
  e->value = s;
  e->null = s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// The line starting at *pos (without its '\n'); moves *pos past it.
std::string next_line(const std::string& text, size_t* pos) {
  size_t nl = text.find('\n', *pos);
  std::string raw = text.substr(*pos, nl == std::string::npos ? std::string::npos : nl - *pos);
  *pos = nl == std::string::npos ? text.size() : nl + 1;
  return raw;
}

// The indentation of the next line from pos on that is not blank or a comment (0 when none).
size_t next_line_indent(const std::string& text, size_t pos) {
  while (pos < text.size()) {
    std::string raw = next_line(text, &pos);
    if (!strip_comment(raw).empty()) return raw.find_first_not_of(' ');
  }
  return 0;
}

// Splits "  key: rest" (body: the line without its comment, for the message) into its indent,
// key and the raw text after the colon.
void split_key_line(const std::string& raw, const std::string& body, const std::string& file, int line, size_t* lead,
                    std::string* key, std::string* rest) {
  *lead = raw.find_first_not_of(' ');
  if (raw[*lead] == '\t') fail(file, line, "tab in the indentation (YAML indents with spaces)");
  size_t k = *lead;
  while (k < raw.size() && is_key_char(raw[k])) ++k;
  if (k == *lead || k >= raw.size() || raw[k] != ':' ||
      (k + 1 < raw.size() && raw[k + 1] != ' ' && raw[k + 1] != '\t' && raw[k + 1] != '\r'))
    fail(file, line, "expected 'key: value', got '" + shown_text(body) + "'");
  *key = raw.substr(*lead, k - *lead);
  *rest = raw.substr(k + 1);
}

}  // namespace

std::vector<ConfigEntry> parse_config_text(const std::string& text, const std::string& file) {
  std::vector<ConfigEntry> out;
  std::set<std::string> seen;
  std::string section;  // the top-level key whose map we are in ("" = none)
  int section_line = 0;
  size_t indent = 0;  // the section's indent, once its first key sets it
  bool section_has_keys = false;
  int line = 0;
  size_t pos = 0;
  auto close_section = [&] {
    if (!section.empty() && !section_has_keys) out.push_back({section, "", false, true, section_line});
    section.clear();
  };
  while (pos < text.size()) {
    std::string raw = next_line(text, &pos);
    ++line;
    if (raw.find('\0') != std::string::npos) fail(file, line, "NUL byte");
    std::string body = strip_comment(raw);
    if (body.empty()) continue;
    if (line == 1 && body == "---") continue;
    size_t lead = 0;
    std::string key, rest;
    split_key_line(raw, body, file, line, &lead, &key, &rest);
    ConfigEntry e;
    e.line = line;
    if (lead == 0) {
      close_section();
      parse_scalar(rest, file, line, &e);
      e.key = key;
      if (!seen.insert(key).second) fail(file, line, "duplicate key '" + shown_text(key) + "'");
      if (e.null && !e.quoted) {  // "params:" opens a map (or is null when nothing follows)
        section = key;
        section_line = line;
        indent = 0;
        section_has_keys = false;
        continue;
      }
      out.push_back(e);
      continue;
    }
    if (section.empty()) fail(file, line, "indented key '" + shown_text(key) + "' outside a section");
    if (indent == 0) indent = lead;
    if (lead != indent)
      fail(file, line,
           "indentation " + std::to_string(lead) + " where '" + shown_text(section) + "' uses " +
               std::to_string(indent) + " (maps nest one level)");
    parse_scalar(rest, file, line, &e);
    // "key:" with nothing after it inside a section would open a deeper map.
    if (e.null && !e.quoted && strip_comment(rest).empty() && next_line_indent(text, pos) > indent)
      fail(file, line, "maps nest one level: '" + shown_text(key) + "' holds a map");
    e.key = section + "." + key;
    if (!seen.insert(e.key).second) fail(file, line, "duplicate key '" + shown_text(e.key) + "'");
    section_has_keys = true;
    out.push_back(e);
  }
  close_section();
  return out;
}

namespace {

enum class Kind { kInt, kFloat, kFraction, kSeconds, kBool, kString, kLevel, kController, kSection };

// horovodrun's keys: the flag a value (or true) stands for, and for booleans the flag false means.
struct KeyRule {
  const char* key;
  Kind kind;
  const char* flag;                     // value flag, or the flag `true` means
  const char* false_flag;               // booleans: the flag `false` means
  bool ignored_unless_enabled = false;  // autotune.*: horovodrun reads them only with autotune on
};

const KeyRule kRules[] = {
    {"controller", Kind::kController, "", ""},
    {"params", Kind::kSection, "", ""},
    {"params.fusion_threshold_mb", Kind::kInt, "--fusion-threshold-mb", ""},
    {"params.cycle_time_ms", Kind::kFloat, "--cycle-time-ms", ""},
    {"params.cache_capacity", Kind::kInt, "--cache-capacity", ""},
    {"params.hierarchical_allreduce", Kind::kBool, "--hierarchical-allreduce", "--no-hierarchical-allreduce"},
    {"params.hierarchical_allgather", Kind::kBool, "--hierarchical-allgather", "--no-hierarchical-allgather"},
    {"params.torus_allreduce", Kind::kBool, "--torus-allreduce", "--no-torus-allreduce"},
    {"autotune", Kind::kSection, "", ""},
    {"autotune.enabled", Kind::kBool, "--autotune", "--no-autotune"},
    {"autotune.log_file", Kind::kString, "--autotune-log-file", "", true},
    {"autotune.warmup_samples", Kind::kInt, "--autotune-warmup-samples", "", true},
    {"autotune.steps_per_sample", Kind::kInt, "--autotune-steps-per-sample", "", true},
    {"autotune.bayes_opt_max_samples", Kind::kInt, "--autotune-bayes-opt-max-samples", "", true},
    {"autotune.gaussian_process_noise", Kind::kFraction, "--autotune-gaussian-process-noise", "", true},
    {"timeline", Kind::kSection, "", ""},
    {"timeline.filename", Kind::kString, "--timeline-filename", ""},
    {"timeline.mark_cycles", Kind::kBool, "--timeline-mark-cycles", "--no-timeline-mark-cycles"},
    {"stall_check", Kind::kSection, "", ""},
    {"stall_check.enabled", Kind::kBool, "--stall-check", "--no-stall-check"},
    {"stall_check.warning_time_seconds", Kind::kInt, "--stall-check-warning-time-seconds", ""},
    {"stall_check.shutdown_time_seconds", Kind::kInt, "--stall-check-shutdown-time-seconds", ""},
    {"library_options", Kind::kSection, "", ""},
    {"library_options.mpi_threads_disable", Kind::kBool, "--mpi-threads-disable", "--no-mpi-threads-disable"},
    {"library_options.num_nccl_streams", Kind::kInt, "--num-nccl-streams", ""},
    {"library_options.thread_affinity", Kind::kInt, "--thread-affinity", ""},
    {"library_options.gloo_timeout_seconds", Kind::kSeconds, "--gloo-timeout-seconds", ""},
    {"logging", Kind::kSection, "", ""},
    {"logging.level", Kind::kLevel, "--log-level", ""},
    {"logging.with_timestamp", Kind::kBool, "--log-with-timestamp", "--log-without-timestamp"},
};

const KeyRule* find_rule(const std::string& key) {
  for (const KeyRule& r : kRules)
    if (key == r.key) return &r;
  return nullptr;
}

// YAML 1.1 booleans, as PyYAML reads them.
int yaml_bool(const std::string& v) {
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (v == t) return 1;
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (v == f) return 0;
  return -1;
}

bool whole_number(const std::string& v) {
  long long x = 0;
  return v.size() <= 12 && parse_decimal(v, IntSign::kPlusOrMinus, LLONG_MIN, LLONG_MAX, &x) == IntText::kOk;
}

bool real_number(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  return !v.empty() && end != v.c_str() && *end == '\0' && errno != ERANGE && std::isfinite(x);
}

bool is_given(const std::vector<std::string>& given, const char* flag) {
  return *flag && std::find(given.begin(), given.end(), flag) != given.end();
}

// The flag a value asks for, refused ones as one-line errors.
void add_flag(const std::string& flag, const std::string* value, const ConfigEntry& e, const std::string& file,
              ConfigFlags* out) {
  const HorovodFlag* f = find_horovod_flag(flag);
  if (f && f->status == FlagStatus::kRefused) fail(file, e.line, e.key + ": " + refusal_line(*f, flag));
  out->args.push_back(flag);
  if (value) out->args.push_back(*value);
}

// "--gloo" or "--mpi" for controller: (any case, as horovodrun lowercases it).
std::string controller_flag(const ConfigEntry& e, const std::string& shown, const std::string& file) {
  std::string v = e.value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v != "gloo" && v != "mpi") fail(file, e.line, shown + " is not gloo or mpi");
  return "--" + v;
}

// Refuses a value that is not of its key's kind (shown: the key and its value, for the message).
void check_value(const KeyRule& rule, const ConfigEntry& e, const std::string& shown, const std::string& file) {
  const KeyRule* r = &rule;
  if ((r->kind == Kind::kInt && (e.quoted || !whole_number(e.value))) ||
      (r->kind == Kind::kFloat && (e.quoted || !real_number(e.value))))
    fail(file, e.line, shown + " is not a" + std::string(r->kind == Kind::kInt ? " whole" : "") + " number");
  if ((r->kind == Kind::kInt || r->kind == Kind::kFloat) && std::strtod(e.value.c_str(), nullptr) < 0)
    fail(file, e.line, shown + " must be >= 0");
  if (r->kind == Kind::kFraction && (e.quoted || !real_number(e.value) || std::strtod(e.value.c_str(), nullptr) < 0 ||
                                     std::strtod(e.value.c_str(), nullptr) > 1))
    fail(file, e.line, shown + " is not a number in [0, 1]");
  if (r->kind == Kind::kSeconds && (e.quoted || !whole_number(e.value) || std::strtod(e.value.c_str(), nullptr) < 1 ||
                                    std::strtod(e.value.c_str(), nullptr) > 1e8))
    fail(file, e.line, shown + " is not a whole number of seconds from 1 to 100000000");
  if (r->kind == Kind::kLevel && horovod_log_level(e.value).empty())
    fail(file, e.line, shown + " is not one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL");
  if (r->kind == Kind::kString && e.value.empty()) fail(file, e.line, e.key + " is empty");
}

}  // namespace

ConfigFlags config_flags(const std::vector<ConfigEntry>& entries, const std::string& file,
                         const std::vector<std::string>& given) {
  ConfigFlags out;
  for (const ConfigEntry& e : entries) {
    const KeyRule* r = find_rule(e.key);
    if (e.key == "logging.hide_timestamp")  // in Horovod's own sample config, but never read
      fail(file, e.line, "logging.hide_timestamp is not a key horovodrun reads: write logging.with_timestamp: false");
    if (!r) fail(file, e.line, "unknown horovodrun config key '" + shown_text(e.key) + "'");
    if (r->kind == Kind::kSection) {
      if (!e.null) fail(file, e.line, "'" + e.key + "' holds a map of keys, not a value");
      continue;
    }
    if (e.null) continue;  // horovodrun skips keys without a value
    const std::string shown = e.key + " '" + shown_text(e.value) + "'";
    if (r->kind == Kind::kBool) {
      int b = e.quoted ? -1 : yaml_bool(e.value);
      if (b < 0) fail(file, e.line, shown + " is not true or false");
      if (is_given(given, r->flag) || is_given(given, r->false_flag)) continue;
      add_flag(b ? r->flag : r->false_flag, nullptr, e, file, &out);
      continue;
    }
    if (r->kind == Kind::kController) {
      out.controller = controller_flag(e, shown, file);
      continue;
    }
    check_value(*r, e, shown, file);
    if (r->ignored_unless_enabled || is_given(given, r->flag)) continue;
    add_flag(r->flag, &e.value, e, file, &out);
  }
  return out;
}
