// report_samples: synthetic --metrics and --timeline files for the report's tests and for
// tests/tool_report_sample (the docs screenshot): a W-rank run on two hosts with a loss that
// falls, per-rank step times, test records per epoch, optional --inspect records, and a killed
// run's timeline (no closing ']'). Deterministic: the same arguments give the same bytes.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace report_samples {

inline std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Deterministic noise in [-1, 1] from three integers.
inline double noise(int a, int b, int c) {
  uint32_t s = uint32_t(a) * 2654435761u ^ uint32_t(b) * 40503u ^ uint32_t(c) * 97u ^ 0x9e3779b9u;
  s ^= s << 13, s ^= s >> 17, s ^= s << 5;
  return double(s % 20001) / 10000.0 - 1.0;
}

inline std::string header_line(int world, const std::vector<std::string>& hosts) {
  std::string h;
  for (size_t r = 0; r < hosts.size(); ++r) h += (r ? "," : "") + std::string("\"") + hosts[r] + "\"";
  return "{\"type\":\"header\",\"format\":\"baresgd-metrics\",\"version\":1,\"world_size\":" + std::to_string(world) +
         ",\"backend\":\"gloo\",\"algorithm\":\"ring\",\"hosts\":[" + h +
         "],\"versions\":{\"baresgd\":\"0.3.0\",\"openblas\":\"0.3.21\",\"gloo\":\"yes\",\"mpi\":\"Open MPI 4.1.4\"},"
         "\"flags\":{\"batch_size\":64,\"test_batch_size\":1000,\"epochs\":3,\"lr\":0.01,\"momentum\":0.5,"
         "\"seed\":42,\"log_interval\":10,\"fp16_allreduce\":false,\"use_adasum\":false,"
         "\"gradient_predivide_factor\":1.0}}\n";
}

inline std::vector<std::string> two_hosts(int world) {
  std::vector<std::string> hosts;
  for (int r = 0; r < world; ++r) hosts.push_back(r < (world + 1) / 2 ? "hpc01" : "hpc03");
  return hosts;
}

// One logged step of every rank (wait_s = comm_s minus the fastest rank's comm_s; rank r arrives
// 0.2 ms x r after rank 0, so the last rank is the last to arrive).
inline std::string step_lines(int world, int epoch, int batch, int step) {
  std::vector<double> comm(static_cast<size_t>(world), 0.0);
  double fastest = 1e9;
  for (int r = 0; r < world; ++r) {
    comm[size_t(r)] = 0.0004 + 0.0003 * (world - 1 - r) / std::max(1, world - 1) + 0.00005 * noise(step, r, 3);
    fastest = std::min(fastest, comm[size_t(r)]);
  }
  std::string s;
  for (int r = 0; r < world; ++r) {
    const double loss = 2.2 * std::exp(-step / 160.0) + 0.12 + 0.08 * noise(step, r, 1);
    const double data = 0.0001 + 0.00002 * noise(step, r, 2),
                 compute = 0.0021 + 0.0002 * r + 0.0001 * noise(step, r, 4);
    const double total = data + compute + comm[size_t(r)];
    s += "{\"type\":\"step\",\"epoch\":" + std::to_string(epoch) + ",\"batch\":" + std::to_string(batch) +
         ",\"step\":" + std::to_string(step) + ",\"rank\":" + std::to_string(r) + ",\"loss\":" + fmt(loss) +
         ",\"lr\":" + fmt(0.01 * world) + ",\"grad_norm\":" + fmt(1.5 * std::exp(-step / 300.0) + 0.2) +
         ",\"data_s\":" + fmt(data) + ",\"compute_s\":" + fmt(compute) + ",\"comm_s\":" + fmt(comm[size_t(r)]) +
         ",\"wait_s\":" + fmt(comm[size_t(r)] - fastest) + ",\"arrive_s\":" + fmt(0.0002 * r) +
         ",\"step_s\":" + fmt(total) + ",\"samples_per_s\":" + fmt(64 / total) + ",\"allreduce_bytes\":87360}\n";
  }
  return s;
}

inline std::string inspect_lines(int world, int step) {
  static const char* const layers[] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                       "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};
  static const double scale[] = {0.9, 0.12, 1.1, 0.08, 1.6, 0.05, 0.7, 0.1};
  std::string s;
  for (int r = 0; r < world; ++r)
    for (int l = 0; l < 8; ++l) {
      const double local = scale[l] * (1 + 0.25 * noise(step, r, l)) * std::exp(-step / 400.0);
      char sum[16];
      std::snprintf(sum, sizeof sum, "%08x", unsigned(0x9f3a12c4u ^ uint32_t(step * 131 + l)));
      s += "{\"type\":\"inspect\",\"step\":" + std::to_string(step) + ",\"rank\":" + std::to_string(r) +
           ",\"layer\":\"" + layers[l] + "\",\"local_grad_norm\":" + fmt(local) +
           ",\"cosine_to_average\":" + fmt(0.9 + 0.05 * noise(step, r, l + 10)) +
           ",\"average_grad_norm\":" + fmt(scale[l] * 0.85 * std::exp(-step / 400.0)) +
           ",\"update_ratio\":" + fmt(0.0004 * (1 + 0.2 * noise(step, l, 7))) +
           ",\"bytes_sent\":87360,\"bytes_received\":87360,\"param_checksum\":\"" + sum + "\"}\n";
    }
  return s;
}

// A finished W-rank run of `epochs` epochs (235 batches each, a Train line every 10 batches).
inline std::string metrics_file(int world, int epochs, const std::vector<int>& inspect_steps) {
  std::string s = header_line(world, two_hosts(world));
  const int batches = 235;
  for (int e = 1; e <= epochs; ++e) {
    for (int b = 0; b < batches; b += 10) {
      const int step = (e - 1) * batches + b;
      for (int i : inspect_steps)
        if (i == step) s += inspect_lines(world, step);
      s += step_lines(world, e, b, step);
    }
    const double acc = 0.985 - 0.045 * std::exp(-(e - 1) / 1.2);
    s += "{\"type\":\"test\",\"epoch\":" + std::to_string(e) + ",\"step\":" + std::to_string(e * batches) +
         ",\"loss\":" + fmt(0.05 + 0.15 * std::exp(-(e - 1) / 1.2)) + ",\"accuracy\":" + fmt(acc) + "}\n";
  }
  s += "{\"type\":\"summary\",\"world_size\":" + std::to_string(world) +
       ",\"backend\":\"gloo\",\"algorithm\":\"ring\",\"epochs\":" + std::to_string(epochs) +
       ",\"train_s\":" + fmt(0.61 * epochs) + ",\"samples_per_s\":98000.0,\"comm_share\":0.12,\"test_accuracy\":" +
       fmt(0.985 - 0.045 * std::exp(-(epochs - 1) / 1.2)) + "}\n";
  return s;
}

// A killed run's trace: array form, per rank a process name and `steps` steps of slices, ending
// in a trailing comma with no ']'.
inline std::string timeline_file(int world, int steps) {
  std::string s = "[\n";
  for (int r = 0; r < world; ++r)
    s += "{\"ph\":\"M\",\"pid\":" + std::to_string(r) + ",\"name\":\"process_name\",\"args\":{\"name\":\"rank " +
         std::to_string(r) + " @ " + two_hosts(world)[size_t(r)] + "\"}},\n";
  const char* names[] = {"read batch", "forward", "backward", "allreduce", "optimizer step"};
  const char* cats[] = {"data", "forward", "backward", "comm", "optimizer"};
  const double durs[] = {100, 700, 1400, 500, 60};
  for (int r = 0; r < world; ++r) {
    double t = 1000;
    for (int k = 0; k < steps; ++k)
      for (int n = 0; n < 5; ++n) {
        const double d = durs[n] * (1 + 0.1 * noise(k, r, n));
        s += "{\"ph\":\"X\",\"pid\":" + std::to_string(r) + ",\"tid\":" + (n == 3 ? "1" : "0") + ",\"name\":\"" +
             names[n] + "\",\"cat\":\"" + cats[n] + "\",\"ts\":" + fmt(t) + ",\"dur\":" + fmt(d) +
             ",\"args\":{\"step\":" + std::to_string(k) + "}},\n";
        t += d;
      }
  }
  return s;
}

}  // namespace report_samples
