// inspect: per-layer statistics of one step and their table for stderr.
#include "src/inspect.h"
#include "src/safe_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "src/crc32.h"

namespace {

double dot(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}

double diff_norm(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    s += d * d;
  }
  return std::sqrt(s);
}

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
std::string pad_right(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

constexpr size_t kMaxWidth = 100;  // every line of the table fits 100 columns
const std::string kContinued = "inspect:   ";
constexpr size_t kLayerW = 13;
// One rank's column group: |g_r|, cos, |g|, |dp|/|p|, sent, recv, crc32.
constexpr size_t kColW[7] = {11, 8, 11, 10, 8, 8, 9};
const char* const kColHead[7] = {"|g_r|", "cos", "|g|", "|dp|/|p|", "sent", "recv", "crc32"};

std::string group(const LayerStats& s) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", s.param_checksum);
  const std::string cells[7] = {fmt("%.4e", s.local_grad_norm),
                                fmt("%+.4f", s.cosine_to_average),
                                fmt("%.4e", s.average_grad_norm),
                                fmt("%.3e", s.update_ratio),
                                std::to_string(s.bytes_sent),
                                std::to_string(s.bytes_received),
                                crc};
  std::string out;
  for (int c = 0; c < 7; ++c) out += pad(cells[c], kColW[c]);
  return out;
}

// The closing line: checksums equal on all ranks? local gradients different?
std::string verdict(const std::vector<LayerStats>& stats, int world) {
  const int L = Net::kNumTensors;
  int equal_layers = 0;
  std::string first_bad;
  double max_rel_spread = 0;
  for (int l = 0; l < L; ++l) {
    bool same = true;
    double lo = stats[l].local_grad_norm, hi = lo;
    for (int r = 1; r < world; ++r) {
      same = same && stats[size_t(r) * L + l].param_checksum == stats[l].param_checksum;
      lo = std::min(lo, stats[size_t(r) * L + l].local_grad_norm);
      hi = std::max(hi, stats[size_t(r) * L + l].local_grad_norm);
    }
    if (same)
      ++equal_layers;
    else if (first_bad.empty())
      first_bad = Net::kParams[l].name;
    if (hi > 0) max_rel_spread = std::max(max_rel_spread, (hi - lo) / hi);
  }
  std::string s = equal_layers == L ? "parameters identical on all ranks (" + std::to_string(L) + "/" +
                                          std::to_string(L) + " layer checksums equal)"
                                    : "PARAMETERS DIFFER between ranks (first: " + first_bad + ", " +
                                          std::to_string(L - equal_layers) + " layers)";
  if (world > 1) s += "; local gradient norms differ between ranks by up to " + fmt("%.1f", 100 * max_rel_spread) + "%";
  return s;
}

std::string wrapped(const std::string& text);
std::string rank_block(int rank, const LayerStats* layers);

}  // namespace

std::vector<LayerStats> layer_stats(const float* local_grad, const float* avg_grad, const float* params_before,
                                    const float* params_after, const AllreduceBytes& bytes) {
  std::vector<LayerStats> out;
  for (const ParamView& p : Net::kParams) {
    const float *g = local_grad + p.offset, *a = avg_grad + p.offset;
    LayerStats s{};
    s.local_grad_norm = std::sqrt(dot(g, g, p.count));
    s.average_grad_norm = std::sqrt(dot(a, a, p.count));
    const double denom = s.local_grad_norm * s.average_grad_norm;
    s.cosine_to_average = denom > 0 ? dot(g, a, p.count) / denom : 0;
    const double pnorm = std::sqrt(dot(params_before + p.offset, params_before + p.offset, p.count));
    s.update_ratio = pnorm > 0 ? diff_norm(params_after + p.offset, params_before + p.offset, p.count) / pnorm : 0;
    s.bytes_sent = share_of(bytes.sent, p.count, Net::kNumParams);
    s.bytes_received = share_of(bytes.received, p.count, Net::kNumParams);

    s.param_checksum = crc32_of(params_after + p.offset, p.count * sizeof(float));
    out.push_back(s);
  }
  // The last layer takes what the rounding down left, so the rows add up to the rank's bytes.
  uint64_t sent = 0, received = 0;
  for (const LayerStats& s : out) sent += s.bytes_sent, received += s.bytes_received;
  out.back().bytes_sent += bytes.sent - sent;
  out.back().bytes_received += bytes.received - received;
  return out;
}

namespace {

// text as lines of at most kMaxWidth characters, cut at spaces: the first after "inspect: ", the
// rest after "inspect:   ".
std::string wrapped(const std::string& text) {
  std::string out, line = "inspect: ", word;
  auto flush_word = [&]() {
    if (word.empty()) return;
    if (line.size() + word.size() + 1 > kMaxWidth && line.size() > kContinued.size()) {
      out += line + "\n";
      line = kContinued;
    } else if (line.back() != ' ') {
      line += ' ';
    }
    line += word;
    word.clear();
  };
  for (char ch : text) {
    if (ch == ' ')
      flush_word();
    else
      word += ch;
  }
  flush_word();
  return out + line + "\n";
}

// One rank's block: its name and the column heads, a row per layer, and the total row (the
// norms of the whole gradient, the rank's bytes).
std::string rank_block(int rank, const LayerStats* layers) {
  std::string out = pad_right("rank " + std::to_string(rank), kLayerW) + " | ";
  for (int c = 0; c < 7; ++c) out += pad(kColHead[c], kColW[c]);
  out += "\n";
  LayerStats total{};
  double local_sq = 0, average_sq = 0;
  for (int l = 0; l < Net::kNumTensors; ++l) {
    const LayerStats& s = layers[l];
    out += pad_right(Net::kParams[l].name, kLayerW) + " | " + group(s) + "\n";
    local_sq += s.local_grad_norm * s.local_grad_norm;
    average_sq += s.average_grad_norm * s.average_grad_norm;
    total.bytes_sent += s.bytes_sent;
    total.bytes_received += s.bytes_received;
  }
  const std::string cells[7] = {fmt("%.4e", std::sqrt(local_sq)),
                                "",
                                fmt("%.4e", std::sqrt(average_sq)),
                                "",
                                std::to_string(total.bytes_sent),
                                std::to_string(total.bytes_received),
                                ""};
  std::string row = pad_right("total", kLayerW) + " | ";
  for (int c = 0; c < 7; ++c) row += pad(cells[c], kColW[c]);
  row.erase(row.find_last_not_of(' ') + 1);  // no trailing blanks where the crc column is empty
  return out + row + "\n";
}

}  // namespace

std::string inspect_table(const InspectHeader& h, const std::vector<LayerStats>& stats) {
  const int L = Net::kNumTensors, W = h.world_size;
  std::string out = wrapped("step " + std::to_string(h.step) + " (epoch " + std::to_string(h.epoch) + ", batch " +
                            std::to_string(h.batch) + "), " + std::to_string(W) + (W == 1 ? " rank" : " ranks") + ", " +
                            h.backend + ", allreduce " + h.algorithm + "; |g_r| local gradient before " +
                            "averaging, cos to the average g, |dp|/|p| update over parameter norm; bytes (" +
                            h.bytes.source + "): " + h.bytes.how);
  for (int r = 0; r < W; ++r) out += rank_block(r, &stats[size_t(r) * L]);
  if (W > 1)
    out += wrapped(
        "sent/recv of a layer: its share of the rank's bytes in proportion to its size (the "
        "algorithm's chunks cut across layers); total: the rank's bytes");
  return out + wrapped("step " + std::to_string(h.step) + ": " + verdict(stats, W));
}

std::string adasum_lines(uint64_t step, const std::vector<std::vector<AdasumLevelCoef>>& coefs) {
  std::string out;
  for (size_t r = 0; r < coefs.size(); ++r) {
    int level = -1;
    for (const AdasumLevelCoef& c : coefs[r]) {
      if (c.level != level) {
        if (level >= 0) out += "\n";
        level = c.level;
        out += "inspect: step " + std::to_string(step) + " adasum rank " + std::to_string(r) + " level " +
               std::to_string(level) + ":";
      }
      const bool named = c.segment >= 0 && c.segment < Net::kNumTensors;
      const std::string layer =
          named ? std::string(Net::kParams[c.segment].name) : "segment " + std::to_string(c.segment);
      out += " " + layer + " a=" + fmt("%.4f", c.a_coef) + " b=" + fmt("%.4f", c.b_coef);
    }
    if (level >= 0) out += "\n";
  }
  return out;
}

void check_dump_dir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) throw std::runtime_error("--inspect-dump " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error("--inspect-dump " + dir + ": not a directory");
  if (::access(dir.c_str(), W_OK) != 0)
    throw std::runtime_error("--inspect-dump " + dir + ": cannot write: " + std::strerror(errno));
}

namespace {
void write_floats(const std::string& path, const float* v, size_t n) {
  std::FILE* f = create_output_stream(path, "--inspect-dump file", "wb");
  const size_t w = std::fwrite(v, sizeof(float), n, f);
  if (std::fclose(f) != 0 || w != n) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}
}  // namespace

void dump_inspect_gradients(const std::string& dir, uint64_t step, int rank, const float* local_grad,
                            const float* avg_grad) {
  const std::string base = dir + "/step" + std::to_string(step) + "-rank" + std::to_string(rank);
  write_floats(base + "-local.f32", local_grad, Net::kNumParams);
  write_floats(base + "-average.f32", avg_grad, Net::kNumParams);
}
