// metrics_reader: one JSON object per line -> typed records (see reporting/metrics_reader.h).
#include "reporting/metrics_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "reporting/byte_source.h"
#include "reporting/file_io.h"
#include "reporting/json.h"

namespace {

constexpr size_t kMaxFileBytes = size_t(1) << 30;  // 1 GiB: far beyond any run's metrics file

// One record's fields, with errors that name the file, the line and the record type.
class Record {
 public:
  Record(const JsonValue& obj, const std::string& where, const std::string& type)
      : obj_(obj), where_(where), type_(type) {}

  [[noreturn]] void fail(const std::string& reason) const {
    throw MetricsError(where_ + ": " + type_ + " record: " + reason);
  }
  const JsonValue& field(const char* name) const {
    const JsonValue* v = obj_.find(name);
    if (!v) fail(std::string("field \"") + name + "\" is missing");
    return *v;
  }
  double number(const char* name) const {
    const JsonValue& v = field(name);
    if (!v.is_number()) fail(std::string("field \"") + name + "\" is not a number");
    return v.number;
  }
  // An optional number (a field newer files have): fallback when absent.
  double number_or(const char* name, double fallback) const { return obj_.find(name) ? number(name) : fallback; }
  // A number, or null (a run with no test pass writes "test_accuracy":null) as NaN.
  double number_or_null(const char* name) const {
    const JsonValue& v = field(name);
    if (v.kind == JsonValue::Kind::Null) return std::nan("");
    return number(name);
  }
  int integer(const char* name) const {
    const double d = number(name);
    if (d != std::floor(d) || d < -2147483648.0 || d > 2147483647.0)
      fail(std::string("field \"") + name + "\" is not an integer (" + field(name).text + ")");
    return int(d);
  }
  std::string string(const char* name) const {
    const JsonValue& v = field(name);
    if (!v.is_string()) fail(std::string("field \"") + name + "\" is not a string");
    return v.text;
  }
  // An optional object field as (key, JSON text) pairs.
  std::vector<std::pair<std::string, std::string>> object_texts(const char* name) const {
    std::vector<std::pair<std::string, std::string>> out;
    const JsonValue* v = obj_.find(name);
    if (!v) return out;
    if (!v->is_object()) fail(std::string("field \"") + name + "\" is not an object");
    for (const auto& m : v->members)
      out.emplace_back(m.first, m.second.is_string() ? m.second.text : json_to_text(m.second));
    return out;
  }
  const JsonValue* optional(const char* name) const { return obj_.find(name); }
  int rank(int world_size) const {
    const int r = integer("rank");
    if (r < 0 || r >= world_size)
      fail("rank " + std::to_string(r) + " is outside world size " + std::to_string(world_size));
    return r;
  }

 private:
  const JsonValue& obj_;
  const std::string& where_;
  const std::string& type_;
};

ReportHeader read_header(const Record& r) {
  ReportHeader h;
  h.version = r.integer("version");
  if (h.version != 1)
    r.fail("format version " + std::to_string(h.version) + " is not supported (this report reads version 1)");
  h.world_size = r.integer("world_size");
  if (h.world_size < 1 || h.world_size > 1 << 20)
    r.fail("world_size " + std::to_string(h.world_size) + " is not in 1..1048576");
  h.backend = r.string("backend");
  h.algorithm = r.string("algorithm");
  const JsonValue& hosts = r.field("hosts");
  if (!hosts.is_array()) r.fail("field \"hosts\" is not an array");
  for (const JsonValue& x : hosts.items) {
    if (!x.is_string()) r.fail("field \"hosts\" holds a value that is not a string");
    h.hosts.push_back(x.text);
  }
  if (int(h.hosts.size()) != h.world_size)
    r.fail("\"hosts\" names " + std::to_string(h.hosts.size()) + " hosts for world size " +
           std::to_string(h.world_size));
  h.versions = r.object_texts("versions");
  h.flags = r.object_texts("flags");
  if (const JsonValue* o = r.optional("oversubscribed")) {
    if (o->kind != JsonValue::Kind::Bool) r.fail("field \"oversubscribed\" is not true or false");
    h.oversubscribed = o->boolean;
  }
  for (const auto& [name, text] : r.object_texts("what_if")) {
    const double v = std::strtod(text.c_str(), nullptr);
    if (name == "straggler_rank") h.straggler_rank = int(v);
    if (name == "link_delay_ms") h.link_delay_ms = v;
    if (name == "link_bytes_per_s") h.link_bytes_per_s = v;
  }
  return h;
}

ReportStep read_step(const Record& r, int world_size) {
  ReportStep s;
  s.epoch = r.integer("epoch");
  s.batch = r.integer("batch");
  s.step = r.integer("step");
  s.rank = r.rank(world_size);
  s.loss = r.number("loss");
  s.lr = r.number("lr");
  s.grad_norm = r.number("grad_norm");
  s.data_s = r.number("data_s");
  s.compute_s = r.number("compute_s");
  s.comm_s = r.number("comm_s");
  s.wait_s = r.number("wait_s");
  s.transfer_s = r.number_or("transfer_s", std::max(0.0, s.comm_s - s.wait_s));
  s.descheduled_s = r.number_or("descheduled_s", 0);
  s.on_cpu_s = r.number_or("on_cpu_s", 0);
  s.run_delay_s = r.number_or("run_delay_s", 0);
  s.has_arrival = r.optional("arrive_s") != nullptr;
  s.arrive_s = r.number_or("arrive_s", 0);
  s.step_s = r.number("step_s");
  s.samples_per_s = r.number("samples_per_s");
  s.allreduce_bytes = r.number("allreduce_bytes");
  return s;
}

TestRecord read_test(const Record& r) {
  TestRecord t;
  t.epoch = r.integer("epoch");
  t.step = r.integer("step");
  t.loss = r.number("loss");
  t.accuracy = r.number("accuracy");
  if (t.accuracy < 0 || t.accuracy > 1) r.fail("accuracy " + r.field("accuracy").text + " is outside [0,1]");
  return t;
}

bool is_hex8(const std::string& s) {
  if (s.size() != 8) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

InspectRecord read_inspect(const Record& r, int world_size) {
  InspectRecord i;
  i.step = r.integer("step");
  i.rank = r.rank(world_size);
  i.layer = r.string("layer");
  i.local_grad_norm = r.number("local_grad_norm");
  i.cosine_to_average = r.number("cosine_to_average");
  i.average_grad_norm = r.number("average_grad_norm");
  i.update_ratio = r.number("update_ratio");
  i.bytes_sent = r.number("bytes_sent");
  i.bytes_received = r.number("bytes_received");
  i.param_checksum = r.string("param_checksum");
  if (!is_hex8(i.param_checksum)) r.fail("param_checksum \"" + i.param_checksum + "\" is not 8 hex digits");
  return i;
}

AdasumRecord read_adasum(const Record& r, int world_size) {
  AdasumRecord a;
  a.step = r.integer("step");
  a.rank = r.rank(world_size);
  a.level = r.integer("level");
  a.layer = r.string("layer");
  a.a_coef = r.number("a_coef");
  a.b_coef = r.number("b_coef");
  return a;
}

SummaryRecord read_summary(const Record& r) {
  SummaryRecord s;
  s.world_size = r.integer("world_size");
  s.backend = r.string("backend");
  s.algorithm = r.string("algorithm");
  s.epochs = r.integer("epochs");
  s.train_s = r.number("train_s");
  s.samples_per_s = r.number("samples_per_s");
  s.comm_share = r.number("comm_share");
  s.test_accuracy = r.number_or_null("test_accuracy");
  return s;
}

bool is_our_header(const JsonValue& v) {
  const JsonValue* type = v.find("type");
  const JsonValue* format = v.find("format");
  return type && type->is_string() && type->text == "header" && format && format->is_string() &&
         format->text == "baresgd-metrics";
}

// Adds one non-header record to m.
void add_record(Metrics& m, const JsonValue& v, const std::string& type, const std::string& where) {
  const Record r(v, where, type);
  const int w = m.header.world_size;
  if (type == "header") throw MetricsError(where + ": a second header record");
  if (type == "step")
    m.steps.push_back(read_step(r, w));
  else if (type == "test")
    m.tests.push_back(read_test(r));
  else if (type == "inspect")
    m.inspects.push_back(read_inspect(r, w));
  else if (type == "adasum")
    m.adasums.push_back(read_adasum(r, w));
  else if (type == "summary") {
    if (m.has_summary) throw MetricsError(where + ": a second summary record");
    m.summary = read_summary(r);
    m.has_summary = true;
  }
  // Any other type: a newer writer's record, ignored.
}

bool blank(const std::string& s) { return json_skip_space(s, 0) == s.size(); }

// The records line by line as they are read: only the current line is in memory.
Metrics parse_metrics(ByteSource& src, const std::string& filename) {
  const std::string not_ours = filename + ": not a baresgd metrics file (first line is not its header)";
  JsonLimits limits;
  limits.max_depth = 16;
  limits.max_bytes = 16u << 20;
  Metrics m;
  bool have_header = false;
  std::string line;
  bool ended = false;
  for (size_t n = 0; src.read_line(line, &ended); ++n) {
    const std::string where = filename + ":" + std::to_string(n + 1);
    if (blank(line)) continue;
    JsonValue v;
    try {
      v = parse_json(line, limits);
    } catch (const JsonError& e) {
      if (!have_header) throw MetricsError(not_ours);
      if (!ended && e.at_end) {
        m.warnings.push_back(where + ": last line is cut short (a killed run?); ignored");
        break;
      }
      throw MetricsError(where + ": not JSON: column " + std::to_string(e.column) + ": " + e.reason);
    }
    if (!have_header) {
      if (!is_our_header(v)) throw MetricsError(not_ours);
      m.header = read_header(Record(v, where, "header"));
      have_header = true;
      continue;
    }
    if (!v.is_object()) throw MetricsError(where + ": not a metrics record (expected a JSON object)");
    const JsonValue* type = v.find("type");
    if (!type || !type->is_string()) throw MetricsError(where + ": record has no \"type\" string");
    add_record(m, v, type->text, where);
  }
  if (!have_header) throw MetricsError(not_ours);
  return m;
}

}  // namespace

Metrics parse_metrics_text(const std::string& text, const std::string& filename) {
  ByteSource src(text);
  return parse_metrics(src, filename);
}

Metrics read_metrics_file(const std::string& path) {
  InputFile f;
  std::string error;
  if (!f.open(path, kMaxFileBytes, error)) throw MetricsError(error);
  ByteSource src(f.fd(), f.size(), path);
  return parse_metrics(src, path);
}
