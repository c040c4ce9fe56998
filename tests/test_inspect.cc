// test_inspect: --inspect and --check-sync — the strict step-list and BARESGD_TEST_PERTURB
// parsers, the per-layer statistics and their table, the allreduce byte model, and real 2-rank
// Gloo runs: every layer and rank in the table, equal checksums, different local gradients, the
// averaged norm equal to the norm of the mean of the dumped local gradients (and to the cosine
// identity |g| = (1/W) sum_r |g_r| cos_r), and --check-sync stopping on an injected divergence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "src/allreduce_bytes.h"
#include "src/check_sync.h"
#include "src/inspect.h"
#include "src/net.h"
#include "src/options.h"
#include "src/perturb_spec.h"
#include "src/step_list.h"
#include "tests/json_check.h"
#include "tests/test_util.h"

namespace {

std::string list_error(const std::string& text) {
  try {
    parse_step_list(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string usage_error(std::vector<std::string> a) {
  try {
    parse_options(a);
  } catch (const TrainUsageError& e) {
    return e.message;
  }
  return "";
}

TEST(Inspect, StepListParsesSortedDistinctSteps) {
  EXPECT_EQ(parse_step_list("0,100,500"), (std::vector<uint64_t>{0, 100, 500}));
  EXPECT_EQ(parse_step_list("500,0,7"), (std::vector<uint64_t>{0, 7, 500}));
  EXPECT_EQ(parse_step_list("3"), (std::vector<uint64_t>{3}));
  EXPECT_EQ(parse_step_list("1099511627776"), (std::vector<uint64_t>{kMaxStepIndex}));
}

TEST(Inspect, StepListRejectsEverythingElse) {
  EXPECT_EQ(list_error(""), "empty list (expected steps like 0,100,500)");
  EXPECT_EQ(list_error("1,"), "item 2 is empty");
  EXPECT_EQ(list_error(",1"), "item 1 is empty");
  EXPECT_EQ(list_error("1,,2"), "item 2 is empty");
  EXPECT_EQ(list_error("1,x"), "item 2 'x' is not a step number");
  EXPECT_EQ(list_error(" 1"), "item 1 ' 1' is not a step number");
  EXPECT_EQ(list_error("+1"), "item 1 '+1' is not a step number");
  EXPECT_EQ(list_error("-1"), "item 1 '-1' is not a step number");
  EXPECT_EQ(list_error("1.5"), "item 1 '1.5' is not a step number");
  EXPECT_EQ(list_error("0x10"), "item 1 '0x10' is not a step number");
  EXPECT_EQ(list_error("1099511627777"), "item 1 1099511627777 is larger than 1099511627776");
  EXPECT_EQ(list_error("99999999999999999999"), "item 1 '99999999999999999999' is not a step number");
  EXPECT_EQ(list_error("5,3,5"), "step 5 is listed twice");
}

TEST(Options, InspectCheckSyncMetricsFlags) {
  Options o = parse_options({"--inspect", "5,0", "--check-sync=10", "--metrics", "m.jsonl", "--inspect-dump", "d"});
  EXPECT_EQ(o.inspect_steps, (std::vector<uint64_t>{0, 5}));
  EXPECT_EQ(o.check_sync, 10);
  EXPECT_EQ(o.metrics, "m.jsonl");
  EXPECT_EQ(o.inspect_dump, "d");
  Options d = parse_options({});
  EXPECT_TRUE(d.inspect_steps.empty());
  EXPECT_EQ(d.check_sync, 0);
  EXPECT_TRUE(d.metrics.empty());
  EXPECT_EQ(usage_error({"--inspect", "0,,5"}), "argument --inspect: invalid step list '0,,5': item 2 is empty");
  EXPECT_EQ(usage_error({"--inspect=a"}), "argument --inspect: invalid step list 'a': item 1 'a' is not a step number");
  EXPECT_EQ(usage_error({"--check-sync", "0"}), "argument --check-sync: 0 is out of range [1, 1073741824]");
  EXPECT_EQ(usage_error({"--check-sync", "x"}), "argument --check-sync: invalid int value: 'x'");
  EXPECT_EQ(usage_error({"--metrics="}), "argument --metrics: expected a path, got ''");
  EXPECT_EQ(usage_error({"--inspect-dump", "d"}), "--inspect-dump needs --inspect STEPS");
}

TEST(CheckSync, PerturbSpecParser) {
  PerturbSpec off = parse_perturb_spec("");
  EXPECT_FALSE(off.active);
  PerturbSpec s = parse_perturb_spec("rank=1,step=30");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.step, 30u);
  EXPECT_EQ(s.layer, "fc1.weight");
  EXPECT_EQ(parse_perturb_spec("step=2,layer=conv1.bias,rank=3").layer, "conv1.bias");
  auto error = [](const std::string& t) {
    try {
      parse_perturb_spec(t);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("rank=1"), "BARESGD_TEST_PERTURB: needs rank=R,step=S");
  EXPECT_EQ(error("rank=1,step=x"), "BARESGD_TEST_PERTURB: step=x is not a number");
  EXPECT_EQ(error("rank=1,rank=2,step=1"), "BARESGD_TEST_PERTURB: rank given twice");
  EXPECT_EQ(error("rank=1,step=1,speed=2"), "BARESGD_TEST_PERTURB: unknown key 'speed' (valid: rank, step, layer)");
  EXPECT_EQ(error("rank1"), "BARESGD_TEST_PERTURB: 'rank1' is not key=value");
  EXPECT_EQ(error("rank=1,step=1,"), "BARESGD_TEST_PERTURB: '' is not key=value");
  PerturbSpec bad_layer = parse_perturb_spec("rank=0,step=0,layer=fc9.weight");
  EXPECT_THROW(check_perturb_layer(bad_layer), std::invalid_argument);
  // The hook changes exactly one parameter of that layer on that rank and step.
  std::vector<float> p(Net::kNumParams, 0.5f), q = p;
  maybe_perturb(s, 0, 30, p.data());
  maybe_perturb(s, 1, 29, p.data());
  EXPECT_EQ(p, q);
  maybe_perturb(s, 1, 30, p.data());
  EXPECT_FLOAT_EQ(p[Net::kParams[4].offset], 0.501f);
  p[Net::kParams[4].offset] = 0.5f;
  EXPECT_EQ(p, q);
}

TEST(CheckSync, DivergenceMessageNamesFirstLayerAndRanks) {
  const int L = Net::kNumTensors;
  std::vector<uint32_t> crcs(size_t(3) * L);
  for (int r = 0; r < 3; ++r)
    for (int l = 0; l < L; ++l) crcs[size_t(r) * L + l] = 0x1000u + uint32_t(l);
  EXPECT_EQ(divergence_message(40, crcs, 3), "");
  crcs[size_t(2) * L + 4] = 0x1a2b3c4d;
  crcs[4] = 0x5e6f7a8b;
  crcs[size_t(1) * L + 4] = 0x5e6f7a8b;
  crcs[size_t(2) * L + 6] = 0xdeadbeef;  // a later layer differs too: the first one is named
  EXPECT_EQ(divergence_message(40, crcs, 3),
            "--check-sync: parameters diverged at step 40: fc1.weight differs on rank 2 (crc 1a2b3c4d) from rank 0 "
            "(crc 5e6f7a8b)");
  crcs[size_t(1) * L + 4] = 0x00000001;
  EXPECT_EQ(divergence_message(40, crcs, 3),
            "--check-sync: parameters diverged at step 40: fc1.weight differs on ranks 1 (crc 00000001), 2 (crc "
            "1a2b3c4d) from rank 0 (crc 5e6f7a8b)");
  EXPECT_TRUE(check_sync_due(10, 0));
  EXPECT_TRUE(check_sync_due(10, 30));
  EXPECT_FALSE(check_sync_due(10, 31));
  EXPECT_FALSE(check_sync_due(0, 0));
  EXPECT_EQ(sync_agreement_line(3, 20, 4),
            "--check-sync: parameters identical on all 4 ranks at every check (3 checks, steps 0 to 20)");
  EXPECT_EQ(sync_agreement_line(1, 0, 2),
            "--check-sync: parameters identical on all 2 ranks at every check (1 check, step 0)");
}

TEST(Inspect, LayerStatsOfKnownVectors) {
  const size_t n = Net::kNumParams;
  std::vector<float> g(n), a(n), before(n, 2.0f), after(n, 2.0f);
  for (size_t i = 0; i < n; ++i) {
    g[i] = (i % 2) ? 1.0f : 0.0f;
    a[i] = 1.0f;
  }
  const ParamView& fc2b = Net::kParams[7];  // 10 elements
  after[fc2b.offset] = 2.5f;
  AllreduceBytes bytes{87360, 43680, "model", "test"};
  std::vector<LayerStats> s = layer_stats(g.data(), a.data(), before.data(), after.data(), bytes);
  ASSERT_EQ(s.size(), size_t(Net::kNumTensors));
  // fc2.bias: offset 21830 (even): g = 0,1,0,1,... -> |g| = sqrt(5), |a| = sqrt(10), cos = 5/sqrt(50).
  EXPECT_NEAR(s[7].local_grad_norm, std::sqrt(5.0), 1e-12);
  EXPECT_NEAR(s[7].average_grad_norm, std::sqrt(10.0), 1e-12);
  EXPECT_NEAR(s[7].cosine_to_average, 5 / std::sqrt(50.0), 1e-12);
  EXPECT_NEAR(s[7].update_ratio, 0.5 / std::sqrt(40.0), 1e-12);
  EXPECT_EQ(s[6].update_ratio, 0);
  EXPECT_EQ(s[4].bytes_sent, 87360u * 16000 / 21840);
  EXPECT_EQ(s[4].bytes_received, 43680u * 16000 / 21840);
  EXPECT_NE(s[7].param_checksum, s[6].param_checksum);
  // The checksum is the CRC-32 of the layer's bytes: equal layers, equal checksums.
  std::vector<LayerStats> again = layer_stats(g.data(), a.data(), before.data(), after.data(), bytes);
  EXPECT_EQ(again[3].param_checksum, s[3].param_checksum);
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// text with the table's wrapped lines joined again ("\ninspect:   " -> " ").
std::string unwrapped(std::string text) {
  for (size_t at; (at = text.find("\ninspect:   ")) != std::string::npos;) text.replace(at, 12, " ");
  for (size_t at; (at = text.find("\n[0]<stderr>:inspect:   ")) != std::string::npos;) text.replace(at, 24, " ");
  return text;
}

TEST(Inspect, TableHasEveryLayerAndRankAndTheVerdict) {
  const int W = 3, L = Net::kNumTensors;
  std::vector<LayerStats> stats(size_t(W) * L);
  for (int r = 0; r < W; ++r)
    for (int l = 0; l < L; ++l) {
      LayerStats& s = stats[size_t(r) * L + l];
      s.local_grad_norm = 0.1 * (r + 1);
      s.cosine_to_average = 0.9;
      s.average_grad_norm = 0.05;
      s.update_ratio = 1e-3;
      s.bytes_sent = s.bytes_received = 1000;
      s.param_checksum = 0xabc00000u + uint32_t(l);
    }
  InspectHeader h{100, 1, 100, W, "gloo", "auto", AllreduceBytes{0, 0, "model", "Gloo direct exchange"}};
  std::string t = unwrapped(inspect_table(h, stats));
  EXPECT_EQ(t.rfind("inspect: step 100 (epoch 1, batch 100), 3 ranks, gloo, allreduce auto;", 0), 0u) << t;
  EXPECT_NE(t.find("bytes (model): Gloo direct exchange"), std::string::npos);
  for (int r = 0; r < W; ++r) EXPECT_NE(t.find("\nrank " + std::to_string(r) + " "), std::string::npos) << t;
  for (const ParamView& p : Net::kParams) {  // once per rank block
    std::regex row("\\n" + std::string(p.name) + " +\\| +1\\.0000e-01 +\\+0\\.9000 ");
    EXPECT_TRUE(std::regex_search(t, row)) << p.name << "\n" << t;
  }
  // Each block ends in a total row: the rank's bytes (8 x 1000) and the whole gradient's norms.
  std::regex total(R"(\ntotal +\| +2\.8284e-01 +1\.4142e-01 +8000 +8000\n)");
  EXPECT_TRUE(std::regex_search(t, total)) << t;
  EXPECT_NE(t.find("sent/recv of a layer: its share of the rank's bytes in proportion to its size"), std::string::npos)
      << t;
  EXPECT_NE(t.find("parameters identical on all ranks (8/8 layer checksums equal); local gradient norms differ "
                   "between ranks by up to 66.7%"),
            std::string::npos)
      << t;
  stats[size_t(2) * L + 2].param_checksum = 1;
  EXPECT_NE(unwrapped(inspect_table(h, stats)).find("PARAMETERS DIFFER between ranks (first: conv2.weight, 1 layers)"),
            std::string::npos);
}

// Issue 24: the table fits 100 columns at W = 4 and 8 (one block per rank), with a total row each.
TEST(Inspect, TableFitsOneHundredColumnsAtFourAndEightRanks) {
  for (int W : {4, 8}) {
    std::vector<LayerStats> stats(size_t(W) * Net::kNumTensors);
    for (LayerStats& s : stats) {
      s.local_grad_norm = s.average_grad_norm = 1.2345e-3;
      s.cosine_to_average = -0.5;
      s.update_ratio = 9.9e-4;
      s.bytes_sent = s.bytes_received = 1234567;
      s.param_checksum = 0xdeadbeef;
    }
    const AllreduceBytes bytes{0, 0, "model",
                               "MPI_Allreduce of the 87360-byte fused buffer: its algorithm is not visible, "
                               "estimated as a ring, 2(W-1)/W x bytes"};
    const std::string t = inspect_table(InspectHeader{12345, 10, 12345, W, "mpi", "mpi", bytes}, stats);
    size_t widest = 0, totals = 0;
    for (const std::string& line : lines_of(t)) {
      widest = std::max(widest, line.size());
      totals += line.rfind("total ", 0) == 0;
    }
    EXPECT_LE(widest, 100u) << "W=" << W << "\n" << t;
    EXPECT_EQ(totals, size_t(W)) << t;
    EXPECT_TRUE(std::regex_search(t, std::regex(R"(\ntotal +\| +3\.4917e-03 +3\.4917e-03 +9876536 +9876536\n)"))) << t;
  }
}

TEST(Inspect, AdasumCoefficientLinesFromTheInputList) {
  EXPECT_EQ(adasum_lines(5, {}), "");
  EXPECT_EQ(adasum_lines(5, {{}, {}}), "");
  std::vector<std::vector<AdasumLevelCoef>> c(2);
  c[0] = {{0, 0, 0.51, 0.49}, {0, 7, 1.0, 1.0}, {1, 0, 0.5, 0.5}};
  c[1] = {{0, 0, 0.49, 0.51}};
  EXPECT_EQ(adasum_lines(5, c),
            "inspect: step 5 adasum rank 0 level 0: conv1.weight a=0.5100 b=0.4900 fc2.bias a=1.0000 b=1.0000\n"
            "inspect: step 5 adasum rank 0 level 1: conv1.weight a=0.5000 b=0.5000\n"
            "inspect: step 5 adasum rank 1 level 0: conv1.weight a=0.4900 b=0.5100\n");
}

TEST(Inspect, ModelledAllreduceBytes) {
  const size_t n = Net::kNumParams;
  AllreduceBytes one = modelled_allreduce_bytes("gloo", "auto", 1, 0, n, 4, false);
  EXPECT_EQ(one.sent, 0u);
  AllreduceBytes d2 = modelled_allreduce_bytes("gloo", "auto", 2, 0, n, 4, false);
  EXPECT_EQ(d2.sent, 87360u);
  EXPECT_EQ(d2.received, 87360u);
  EXPECT_EQ(d2.source, "model");
  EXPECT_NE(d2.how.find("direct exchange"), std::string::npos);
  EXPECT_EQ(modelled_allreduce_bytes("gloo", "auto", 4, 1, n, 2, false).sent, 3u * 43680);
  // (W-1) * 87360 > 1 MiB from W = 14: Gloo's ring, 2(W-1)/W of the bytes.
  AllreduceBytes ring = modelled_allreduce_bytes("gloo", "auto", 16, 3, n, 4, false);
  EXPECT_EQ(ring.sent, 2u * 15 * 87360 / 16);
  EXPECT_NE(ring.how.find("ring"), std::string::npos);
  // --allreduce gloo: gloo::allreduce picks its ring at every size, so 2(W-1)/W at W = 4 too.
  AllreduceBytes gloo_ring = modelled_allreduce_bytes("gloo", "gloo", 4, 0, n, 4, false);
  EXPECT_EQ(gloo_ring.sent, 2u * 3 * 87360 / 4);
  EXPECT_EQ(gloo_ring.received, 131040u);
  EXPECT_NE(gloo_ring.how.find("ring"), std::string::npos) << gloo_ring.how;
  AllreduceBytes mpi = modelled_allreduce_bytes("mpi", "mpi", 4, 0, n, 4, false);
  EXPECT_EQ(mpi.sent, 2u * 3 * 87360 / 4);
  EXPECT_NE(mpi.how.find("not visible"), std::string::npos);
  // Adasum: halves of 10920 then 5460 floats, each sent twice (halving, then rebuilding).
  EXPECT_EQ(modelled_allreduce_bytes("gloo", "auto", 2, 1, n, 4, true).sent, 2u * 10920 * 4);
  EXPECT_EQ(modelled_allreduce_bytes("mpi", "mpi", 4, 2, n, 4, true).sent, 2u * (10920 + 5460) * 4);
}

TEST(Inspect, ByteCountingObserverCountsStepsAndPassesThemOn) {
  struct Recorder : AllreduceObserver {
    int begins = 0, steps = 0, ends = 0;
    void on_call_begin(AllreduceAlgorithm, size_t, int64_t) override { ++begins; }
    void on_step(const AllreduceStep&) override { ++steps; }
    void on_call_end(int64_t) override { ++ends; }
  } next;
  ByteCountingObserver c(&next);
  c.on_call_begin(AllreduceAlgorithm::kRing, 400, 0);
  c.on_step(AllreduceStep{0, "reduce-scatter", 1, 3, 100, 100, 0, 1});
  c.on_step(AllreduceStep{1, "allgather", 1, -1, 100, 50, 1, 2});
  c.on_call_end(2);
  EXPECT_EQ(c.sent(), 200u);
  EXPECT_EQ(c.received(), 100u);
  EXPECT_EQ(c.steps(), 2u);
  EXPECT_EQ(next.begins, 1);
  EXPECT_EQ(next.steps, 2);
  EXPECT_EQ(next.ends, 1);
  c.reset();
  EXPECT_EQ(c.sent() + c.received() + c.steps(), 0u);
}

// ---- real runs ----------------------------------------------------------------------------

std::vector<float> load_floats(const std::string& path) {
  const std::string b = testutil::read_file(path);
  std::vector<float> v(b.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

// One table row of rank 0's stderr: the 7 cells of each rank's column group.
struct Row {
  std::vector<std::vector<std::string>> ranks;
};

class InspectRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("inspect");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
};

TEST_F(InspectRun, TwoGlooRanksTableMatchesTheDumpedGradients) {
  const int W = 2;
  auto r = testutil::run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() +
                             " --max-steps 6 --log-interval 5 --inspect 0,5 --inspect-dump " + dir + " --metrics " +
                             dir + "/m.jsonl",
                         300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // Rows of the two tables from rank 0's stderr.
  std::map<uint64_t, std::map<std::string, Row>> tables;
  uint64_t current = ~0ull;
  // Each table: its header, then one block per rank ("rank K | |g_r| cos ..."), a row per layer of
  // 7 cells after the "|", and a total row.
  std::regex head(R"(^\[0\]<stderr>:inspect: step (\d+) \(epoch 1, batch \d+\), 2 ranks, gloo, allreduce auto;)");
  EXPECT_NE(unwrapped(r.err).find("bytes (model): Gloo direct exchange"), std::string::npos) << r.err;
  int rank_block = -1;
  for (const std::string& line : lines_of(r.err)) {
    std::smatch m;
    if (std::regex_search(line, m, head)) {
      current = std::stoull(m[1]);
      rank_block = -1;
      continue;
    }
    EXPECT_EQ(line.find("[1]<stderr>:inspect"), std::string::npos) << "only rank 0 prints: " << line;
    const std::string prefix = "[0]<stderr>:";
    if (current == ~0ull || line.rfind(prefix, 0) != 0) continue;
    std::istringstream cells(line.substr(prefix.size()));
    std::string name, bar, cell;
    cells >> name;
    if (name == "rank") {
      cells >> rank_block;
      continue;
    }
    bool is_layer = false;
    for (const ParamView& p : Net::kParams) is_layer = is_layer || name == p.name;
    if (!is_layer) continue;
    cells >> bar;
    ASSERT_EQ(bar, "|") << line;
    Row& row = tables[current][name];
    ASSERT_EQ(int(row.ranks.size()), rank_block) << "rank blocks out of order: " << line;
    row.ranks.emplace_back();
    for (int c = 0; c < 7 && cells >> cell; ++c) row.ranks.back().push_back(cell);
  }
  ASSERT_EQ(tables.size(), 2u) << r.err;
  for (uint64_t step : {0ull, 5ull}) {
    ASSERT_EQ(tables[step].size(), size_t(Net::kNumTensors)) << "step " << step << "\n" << r.err;
    const std::string base = dir + "/step" + std::to_string(step) + "-rank";
    std::vector<std::vector<float>> local;
    for (int k = 0; k < W; ++k) local.push_back(load_floats(base + std::to_string(k) + "-local.f32"));
    const std::vector<float> avg = load_floats(base + "0-average.f32");
    ASSERT_EQ(avg.size(), Net::kNumParams);
    EXPECT_EQ(testutil::read_file(base + "0-average.f32"), testutil::read_file(base + "1-average.f32"));
    for (const ParamView& p : Net::kParams) {
      const Row& row = tables[step][p.name];
      ASSERT_EQ(row.ranks.size(), size_t(W)) << p.name;
      for (int k = 0; k < W; ++k) ASSERT_EQ(row.ranks[k].size(), 7u) << p.name;
      EXPECT_EQ(row.ranks[0][6], row.ranks[1][6]) << "step " << step << " " << p.name << ": checksums differ";
      EXPECT_NE(row.ranks[0][0], row.ranks[1][0]) << "step " << step << " " << p.name << ": local norms equal";
      // The mean of the dumped local gradients, its norm, and each rank's norm and cosine.
      double mean_sq = 0, identity = 0;
      std::vector<double> norm_r(W, 0);
      for (size_t i = p.offset; i < p.offset + p.count; ++i) {
        double m = 0;
        for (int k = 0; k < W; ++k) m += local[k][i];
        m /= W;
        mean_sq += m * m;
        EXPECT_NEAR(avg[i], m, 1e-6 + 1e-5 * std::fabs(m)) << p.name << " element " << i;
      }
      const double mean_norm = std::sqrt(mean_sq);
      for (int k = 0; k < W; ++k) {
        const double printed_local = std::stod(row.ranks[k][0]), printed_cos = std::stod(row.ranks[k][1]);
        const double printed_avg = std::stod(row.ranks[k][2]);
        for (size_t i = p.offset; i < p.offset + p.count; ++i) norm_r[k] += double(local[k][i]) * local[k][i];
        norm_r[k] = std::sqrt(norm_r[k]);
        EXPECT_NEAR(printed_local, norm_r[k], 1e-4 * norm_r[k]) << p.name << " rank " << k;
        EXPECT_NEAR(printed_avg, mean_norm, 1e-4 * mean_norm) << p.name << " rank " << k;
        identity += printed_local * printed_cos / W;
      }
      // |g| = (1/W) sum_r |g_r| cos_r, within the table's 4-5 printed digits.
      EXPECT_NEAR(identity, mean_norm, 2e-4 * mean_norm + 1e-9) << p.name;
    }
  }
  // The inspect records hold the same numbers with all their digits.
  int records = 0;
  for (const std::string& line : lines_of(testutil::read_file(dir + "/m.jsonl"))) {
    ASSERT_TRUE(jsoncheck::valid_json(line)) << line;
    if (jsoncheck::raw_field(line, "type") != "inspect") continue;
    ++records;
    const long long step_field = jsoncheck::int_field(line, "step"), rank_field = jsoncheck::int_field(line, "rank");
    ASSERT_TRUE(step_field >= 0 && rank_field >= 0 && rank_field < W)
        << "step or rank missing or out of range: " << line;
    const uint64_t step = uint64_t(step_field);
    const int rank = int(rank_field);
    const std::string layer = jsoncheck::raw_field(line, "layer");
    const Row& row = tables[step][layer];
    ASSERT_EQ(row.ranks.size(), size_t(W)) << line;
    EXPECT_EQ(jsoncheck::raw_field(line, "param_checksum"), row.ranks[rank][6]) << line;
    EXPECT_EQ(jsoncheck::int_field(line, "bytes_sent"), std::stoll(row.ranks[rank][4])) << line;
    EXPECT_EQ(jsoncheck::raw_field(line, "bytes_source"), "model");
    // The recorded averaged norm = the norm of the mean of the local gradients, to float precision.
    const std::string base = dir + "/step" + std::to_string(step) + "-rank";
    std::vector<float> l0 = load_floats(base + "0-local.f32"), l1 = load_floats(base + "1-local.f32");
    const ParamView* p = nullptr;
    for (const ParamView& q : Net::kParams)
      if (layer == q.name) p = &q;
    ASSERT_NE(p, nullptr) << line;
    double sq = 0;
    for (size_t i = p->offset; i < p->offset + p->count; ++i) sq += std::pow((double(l0[i]) + l1[i]) / 2, 2);
    EXPECT_NEAR(jsoncheck::num_field(line, "average_grad_norm"), std::sqrt(sq), 1e-5 * std::sqrt(sq)) << line;
  }
  EXPECT_EQ(records, 2 * W * Net::kNumTensors);
}

TEST_F(InspectRun, CheckSyncStopsOnTheInjectedDivergence) {
  auto r = testutil::run("BARESGD_TEST_PERTURB=rank=1,step=7 " + testutil::launch_bin() + " -np 2 --gloo " +
                             testutil::train_bin() + " --max-steps 20 --log-interval 5 --check-sync 3",
                         300);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  // Checked after steps 0, 3, 6, 9: the change made after step 7 is caught at step 9.
  std::regex msg(
      R"(\[[01]\]<stderr>:train: error: --check-sync: parameters diverged at step 9: fc1\.weight differs on rank 1 \(crc ([0-9a-f]{8})\) from rank 0 \(crc ([0-9a-f]{8})\)\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, msg)) << r.err;
  EXPECT_NE(m[1], m[2]);
  EXPECT_EQ(r.out.find("[0]<stdout>:Train Epoch: 1 [640/30000 (2%)]"), std::string::npos)
      << "the job went on after the divergence: " << r.out;
  EXPECT_EQ(r.err.find("train: summary:"), std::string::npos);
}

TEST_F(InspectRun, CleanRunPassesCheckSyncEveryStep) {
  auto r = testutil::run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() +
                             " --max-steps 20 --log-interval 5 --check-sync 1",
                         300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // One line, from rank 0, when every check agreed: steps 0..19, 20 checks.
  const std::string line =
      "[0]<stderr>:train: --check-sync: parameters identical on all 2 ranks at every check (20 checks, steps 0 to "
      "19)\n";
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--check-sync"), r.err.rfind("--check-sync")) << "more than one --check-sync line: " << r.err;
  EXPECT_NE(r.err.find("[0]<stderr>:train: summary: world_size=2 backend=gloo algorithm=auto epochs=0 steps=20 "),
            std::string::npos)
      << r.err;
}

TEST_F(InspectRun, BadInputStopsBeforeTraining) {
  const std::string train = testutil::train_bin();
  auto list = testutil::run(train + " --inspect 0,x", 60);
  EXPECT_EQ(list.status, 2);
  EXPECT_NE(
      list.err.find("train: error: argument --inspect: invalid step list '0,x': item 2 'x' is not a step number\n"),
      std::string::npos)
      << list.err;
  auto every = testutil::run(train + " --check-sync -1", 60);
  EXPECT_EQ(every.status, 2);
  EXPECT_NE(every.err.find("train: error: argument --check-sync: -1 is out of range"), std::string::npos) << every.err;
  auto dump = testutil::run(train + " --inspect 0 --inspect-dump /nonexistent/d --max-steps 1", 60);
  EXPECT_EQ(dump.status, 1);
  EXPECT_NE(dump.err.find("train: error: --inspect-dump /nonexistent/d: No such file or directory\n"),
            std::string::npos)
      << dump.err;
  EXPECT_EQ(dump.out, "");
  auto hook = testutil::run("BARESGD_TEST_PERTURB=rank=1 " + train + " --max-steps 1", 60);
  EXPECT_EQ(hook.status, 1);
  EXPECT_NE(hook.err.find("train: error: BARESGD_TEST_PERTURB: needs rank=R,step=S\n"), std::string::npos) << hook.err;
  EXPECT_EQ(hook.out, "");
}

}  // namespace
