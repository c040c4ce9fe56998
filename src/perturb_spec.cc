// perturb_spec: strict parser of BARESGD_TEST_PERTURB ("rank=1,step=30[,layer=fc1.weight]").
#include "src/perturb_spec.h"

#include <map>
#include <stdexcept>

#include "src/parse_int.h"
#include "src/step_list.h"

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("BARESGD_TEST_PERTURB: " + what); }

long long parse_number(const std::string& key, const std::string& v, long long hi) {
  long long x = 0;
  const IntText t = v.size() > 13 ? IntText::kNotDigits : parse_decimal(v, IntSign::kNone, 0, hi, &x);
  if (t == IntText::kOutOfRange) bad(key + "=" + v + " is larger than " + std::to_string(hi));
  if (t != IntText::kOk) bad(key + "=" + v + " is not a number");
  return x;
}

}  // namespace

PerturbSpec parse_perturb_spec(const std::string& text) {
  PerturbSpec s;
  if (text.empty()) return s;
  std::map<std::string, std::string> kv;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) bad("'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    if (key != "rank" && key != "step" && key != "layer") bad("unknown key '" + key + "' (valid: rank, step, layer)");
    if (!kv.emplace(key, item.substr(eq + 1)).second) bad(key + " given twice");
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (!kv.count("rank") || !kv.count("step")) bad("needs rank=R,step=S");
  s.active = true;
  s.rank = int(parse_number("rank", kv["rank"], 1 << 16));
  s.step = uint64_t(parse_number("step", kv["step"], (long long)kMaxStepIndex));
  if (kv.count("layer")) {
    if (kv["layer"].empty()) bad("layer= is empty");
    s.layer = kv["layer"];
  }
  return s;
}
