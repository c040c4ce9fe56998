// run_config: the text of a checkpoint's configuration block, its strict parser, and the
// differences --resume names.
#include "src/run_config.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "comm/allreduce.h"
#include "src/shown_text.h"

namespace {

const char* const kKeys[] = {"run",
                             "world-size",
                             "batch-size",
                             "seed",
                             "lr",
                             "momentum",
                             "epochs",
                             "dropout",
                             "fp16-allreduce",
                             "gradient-predivide-factor",
                             "use-adasum",
                             "allreduce",
                             "threads",
                             "epoch-first-sample"};

// The fewest significant digits that read back as exactly x.
std::string float_text(double x) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

std::runtime_error bad(const std::string& what) { return std::runtime_error("config block: " + what); }

long long int_value(const std::string& key, const std::string& v, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || x < lo || x > hi || v[0] == ' ' || v[0] == '+')
    throw bad(key + " '" + shown_text(v) + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
              "]");
  return x;
}

double float_value(const std::string& key, const std::string& v, bool zero_allowed) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || x < 0 || (!zero_allowed && x == 0) ||
      v.find_first_not_of("0123456789.e-+") != std::string::npos)
    throw bad(key + " '" + shown_text(v) + "' is not a finite number " + (zero_allowed ? ">= 0" : "> 0"));
  return x;
}

bool switch_value(const std::string& key, const std::string& v) {
  if (v == "on") return true;
  if (v == "off") return false;
  throw bad(key + " '" + shown_text(v) + "' is neither on nor off");
}

const char* on_off(bool b) { return b ? "on" : "off"; }

std::string switch_phrase(const std::string& flag, bool set) { return set ? flag : "no " + flag; }

}  // namespace

bool is_run_id(const std::string& s) {
  return s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string format_run_config(const RunConfig& c) {
  const RunSettings& s = c.settings;
  std::string out;
  auto line = [&](const char* key, const std::string& v) { out += std::string(key) + " " + v + "\n"; };
  line("run", c.run_id);
  line("world-size", std::to_string(c.world_size));
  line("batch-size", std::to_string(c.batch_size));
  line("seed", std::to_string(c.seed));
  line("lr", float_text(s.lr));
  line("momentum", float_text(s.momentum));
  line("epochs", std::to_string(s.epochs));
  line("dropout", on_off(s.dropout));
  line("fp16-allreduce", on_off(s.fp16_allreduce));
  line("gradient-predivide-factor", float_text(s.predivide));
  line("use-adasum", on_off(s.adasum));
  line("allreduce", s.allreduce);
  line("threads", std::to_string(s.threads));
  line("epoch-first-sample", std::to_string(c.epoch_first_sample));
  return out;
}

RunConfig parse_run_config(const std::string& text) {
  if (text.size() > kMaxRunConfigBytes)
    throw bad(std::to_string(text.size()) + " bytes (at most " + std::to_string(kMaxRunConfigBytes) + ")");
  if (text.empty() || text.back() != '\n') throw bad("does not end with a newline");
  std::map<std::string, std::string> values;
  size_t at = 0;
  for (int line = 1; at < text.size(); ++line) {
    const size_t nl = text.find('\n', at);
    const std::string l = text.substr(at, nl - at);
    at = nl + 1;
    const size_t space = l.find(' ');
    if (space == std::string::npos || space == 0)
      throw bad("line " + std::to_string(line) + " '" + shown_text(l) + "' is not 'key value'");
    const std::string key = l.substr(0, space);
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) throw bad("line " + std::to_string(line) + ": unknown key '" + shown_text(key) + "'");
    if (!values.emplace(key, l.substr(space + 1)).second)
      throw bad("line " + std::to_string(line) + ": " + key + " given twice");
  }
  for (const char* k : kKeys)
    if (!values.count(k)) throw bad(std::string("no ") + k + " line");
  RunConfig c;
  c.run_id = values["run"];
  if (!is_run_id(c.run_id)) throw bad("run '" + shown_text(c.run_id) + "' is not 16 lowercase hex digits");
  c.world_size = int(int_value("world-size", values["world-size"], 1, 1 << 24));
  c.batch_size = int(int_value("batch-size", values["batch-size"], 1, 1 << 20));
  c.seed = int_value("seed", values["seed"], -(1LL << 40), 1LL << 40);
  RunSettings& s = c.settings;
  s.lr = float_value("lr", values["lr"], true);
  s.momentum = float_value("momentum", values["momentum"], true);
  s.epochs = int(int_value("epochs", values["epochs"], 0, 1 << 20));
  s.dropout = switch_value("dropout", values["dropout"]);
  s.fp16_allreduce = switch_value("fp16-allreduce", values["fp16-allreduce"]);
  s.predivide = float_value("gradient-predivide-factor", values["gradient-predivide-factor"], false);
  s.adasum = switch_value("use-adasum", values["use-adasum"]);
  s.allreduce = values["allreduce"];
  try {
    parse_allreduce_algorithm(s.allreduce);
  } catch (const std::invalid_argument&) {
    throw bad("allreduce '" + shown_text(s.allreduce) + "' is not an --allreduce name");
  }
  s.threads = int(int_value("threads", values["threads"], 1, 1024));
  c.epoch_first_sample = int_value("epoch-first-sample", values["epoch-first-sample"], 0, 1LL << 40);
  return c;
}

std::vector<SettingChange> run_config_changes(const RunConfig& was, bool has_settings, const RunConfig& now) {
  std::vector<SettingChange> out;
  auto differ = [&](SettingChange::Kind kind, const std::string& a, const std::string& b) {
    if (a != b) out.push_back({kind, a, b});
  };
  auto ranks = [](int w) { return std::to_string(w) + (w == 1 ? " rank" : " ranks"); };
  differ(SettingChange::kWorldSize, ranks(was.world_size), ranks(now.world_size));
  differ(SettingChange::kNumbers, "--batch-size " + std::to_string(was.batch_size),
         "--batch-size " + std::to_string(now.batch_size));
  differ(SettingChange::kNumbers, "--seed " + std::to_string(was.seed), "--seed " + std::to_string(now.seed));
  if (!has_settings) return out;
  const RunSettings &a = was.settings, &b = now.settings;
  differ(SettingChange::kNumbers, "--lr " + float_text(a.lr), "--lr " + float_text(b.lr));
  differ(SettingChange::kNumbers, "--momentum " + float_text(a.momentum), "--momentum " + float_text(b.momentum));
  differ(SettingChange::kHarmless, "--epochs " + std::to_string(a.epochs), "--epochs " + std::to_string(b.epochs));
  differ(SettingChange::kNumbers, a.dropout ? "dropout on" : "--no-dropout", b.dropout ? "dropout on" : "--no-dropout");
  differ(SettingChange::kNumbers, switch_phrase("--fp16-allreduce", a.fp16_allreduce),
         switch_phrase("--fp16-allreduce", b.fp16_allreduce));
  differ(SettingChange::kNumbers, "--gradient-predivide-factor " + float_text(a.predivide),
         "--gradient-predivide-factor " + float_text(b.predivide));
  differ(SettingChange::kNumbers, switch_phrase("--use-adasum", a.adasum), switch_phrase("--use-adasum", b.adasum));
  differ(SettingChange::kNumbers, "--allreduce " + a.allreduce, "--allreduce " + b.allreduce);
  differ(SettingChange::kHarmless, "--threads " + std::to_string(a.threads), "--threads " + std::to_string(b.threads));
  return out;
}

std::string changes_text(const std::vector<SettingChange>& changes, bool was, std::vector<SettingChange::Kind> kinds) {
  std::string out;
  for (const SettingChange& c : changes)
    for (SettingChange::Kind k : kinds)
      if (c.kind == k) out += (out.empty() ? "" : " ") + (was ? c.was : c.now);
  return out;
}
