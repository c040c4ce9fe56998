// test_metrics: the --metrics JSON Lines file and the end-of-run summary — record builders (field
// order, escaping, wait_s), and real runs: a 2-rank Gloo job of 2 epochs whose file has the header
// first, one step record per rank per logged step with the right epochs/batches/steps and losses,
// a test record per epoch, the summary last, every line valid JSON; the summary line on stderr;
// stdout byte-for-byte as without the new flags; an unwritable path stopping every rank first.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "src/json_line.h"
#include "src/metrics.h"
#include "src/run_summary.h"
#include "tests/json_check.h"
#include "tests/test_util.h"

namespace {

using jsoncheck::int_field;
using jsoncheck::num_field;
using jsoncheck::raw_field;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// The keys of a flat record, in order.
std::vector<std::string> keys_of(const std::string& line) {
  std::vector<std::string> keys;
  std::regex key(R"([{,]"([a-z_0-9]+)\":)");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), key); it != std::sregex_iterator(); ++it)
    keys.push_back((*it)[1]);
  return keys;
}

TEST(Metrics, JsonLineEscapesAndNullsNonFinite) {
  JsonLine j;
  j.str("s", "a\"b\\c\nd\x01")
      .num("x", 0.25)
      .num("nan", std::nan(""))
      .integer("i", -3)
      .boolean("b", true)
      .strings("v", {"h1", "h\"2"});
  EXPECT_EQ(j.object(), R"({"s":"a\"b\\c\nd\u0001","x":0.25,"nan":null,"i":-3,"b":true,"v":["h1","h\"2"]})");
  EXPECT_TRUE(jsoncheck::valid_json(j.object()));
  EXPECT_FALSE(jsoncheck::valid_json("{\"a\":1,}"));
  EXPECT_FALSE(jsoncheck::valid_json("{\"a\":01}"));
  EXPECT_FALSE(jsoncheck::valid_json("{\"a\":1} x"));
}

// Rank 0 arrives at t = 1 ms (on rank 0's clock) and leaves at 5 ms, 0.5 ms of it runnable without
// a CPU; rank 1 arrives last at 4 ms and leaves at 5 ms, never without a CPU. Rank 0 waited 3 ms
// for rank 1; its run_delay's share after rank 1's arrival (1/4 of its exchange), the longest of
// the two ranks', is both ranks' descheduled time.
TEST(Metrics, StepRecordsInFormatOrderWithWaitUntilTheLastArrival) {
  std::vector<StepRecord> ranks = {
      {2.3, 1.5, 0.001, 0.002, 0.0040, 0.0075, 8533.3, 0, 87360, 1000000, 5000000, 300000, 500000},
      {2.1, 1.4, 0.001, 0.003, 0.0010, 0.0060, 10666.7, 1, 87360, 4000000, 5000000, 900000, 0}};
  std::vector<std::string> lines = step_records(StepPosition{1, 10, 10, 0.02}, ranks);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(keys_of(lines[0]),
            (std::vector<std::string>{"type",        "epoch",    "batch",      "step",          "rank",
                                      "loss",        "lr",       "grad_norm",  "data_s",        "compute_s",
                                      "comm_s",      "wait_s",   "transfer_s", "descheduled_s", "on_cpu_s",
                                      "run_delay_s", "arrive_s", "step_s",     "samples_per_s", "allreduce_bytes"}));
  EXPECT_EQ(lines[0], R"({"type":"step","epoch":1,"batch":10,"step":10,"rank":0,"loss":2.3,"lr":0.02,"grad_norm":1.5,)"
                      R"("data_s":0.001,"compute_s":0.002,"comm_s":0.004,"wait_s":0.003,"transfer_s":0.000875,)"
                      R"("descheduled_s":0.000125,"on_cpu_s":0.0003,"run_delay_s":0.0005,"arrive_s":0,)"
                      R"("step_s":0.0075,"samples_per_s":8533.3,"allreduce_bytes":87360})");
  EXPECT_DOUBLE_EQ(num_field(lines[1], "wait_s"), 0);
  EXPECT_DOUBLE_EQ(num_field(lines[1], "transfer_s"), 0.000875);
  EXPECT_DOUBLE_EQ(num_field(lines[1], "descheduled_s"), 0.000125);
  EXPECT_DOUBLE_EQ(num_field(lines[1], "arrive_s"), 0.003);
}

TEST(Metrics, HeaderTestInspectAdasumAndSummaryRecords) {
  MetricsHeader h;
  h.world_size = 2;
  h.backend = "gloo";
  h.algorithm = "auto";
  h.hosts = {"hpc01", "hpc03"};
  fill_versions(&h, "gloo");
  EXPECT_EQ(h.baresgd, "0.3.0");
  EXPECT_NE(h.openblas.find("OpenBLAS"), std::string::npos) << h.openblas;
  Options o;
  o.inspect_steps = {0, 5};
  const std::string header = header_record(h, o);
  ASSERT_TRUE(jsoncheck::valid_json(header)) << header;
  EXPECT_NE(header.find(R"(,"oversubscribed":false,"what_if":{"straggler_rank":-1,"link_delay_ms":0,)"
                        R"("link_bytes_per_s":0,"link":"real"}})"),
            std::string::npos)
      << header;
  MetricsHeader slow = h;
  slow.oversubscribed = true;
  slow.link_delay_ms = 2;
  slow.link_bytes_per_s = 12.5e6;
  slow.straggler_rank = 2;
  EXPECT_NE(
      header_record(slow, o).find(R"(,"oversubscribed":true,"what_if":{"straggler_rank":2,"link_delay_ms":2,)"
                                  R"x("link_bytes_per_s":12500000,"link":"emulated (our algorithms' messages)"}})x"),
      std::string::npos);
  EXPECT_EQ(header.rfind(R"({"type":"header","format":"baresgd-metrics","version":1,"world_size":2,"backend":"gloo",)"
                         R"("algorithm":"auto","hosts":["hpc01","hpc03"],"versions":{"baresgd":"0.3.0","openblas":)",
                         0),
            0u)
      << header;
  EXPECT_NE(header.find(R"("flags":{"batch_size":64,"test_batch_size":1000,"epochs":10,"lr":0.01,"momentum":0.5,)"),
            std::string::npos)
      << header;
  for (const char* flag : {"\"fp16_allreduce\":false", "\"use_adasum\":false", "\"gradient_predivide_factor\":1",
                           "\"inspect\":[0,5]", "\"check_sync\":0", "\"max_steps\":-1", "\"metrics\":\"\""})
    EXPECT_NE(header.find(flag), std::string::npos) << flag;
  EXPECT_EQ(test_record(1, 235, 0.2034, 0.9412),
            R"({"type":"test","epoch":1,"step":235,"loss":0.2034,"accuracy":0.9412})");
  LayerStats s{0.12, 0.93, 0.11, 0.0004, 87360, 87360, 0x9f3a12c4u, 0};
  EXPECT_EQ(inspect_record(100, 1, "conv1.weight", s, "model"),
            R"({"type":"inspect","step":100,"rank":1,"layer":"conv1.weight","local_grad_norm":0.12,)"
            R"("cosine_to_average":0.93,"average_grad_norm":0.11,"update_ratio":0.0004,"bytes_sent":87360,)"
            R"("bytes_received":87360,"param_checksum":"9f3a12c4","bytes_source":"model"})");
  EXPECT_EQ(adasum_record(100, 3, AdasumLevelCoef{0, 2, 0.51, 0.49}),
            R"({"type":"adasum","step":100,"rank":3,"level":0,"layer":"conv2.weight","a_coef":0.51,"b_coef":0.49})");
  RunSummary sum = make_run_summary(4, "gloo", "auto", 1, 235, 4 * 0.61, 4 * 0.61 * 0.12, 60000, true, 0.9412);
  const std::string rec = summary_record(sum);
  EXPECT_EQ(keys_of(rec), (std::vector<std::string>{"type", "world_size", "backend", "algorithm", "epochs", "train_s",
                                                    "samples_per_s", "comm_share", "test_accuracy", "steps"}));
  EXPECT_NEAR(num_field(rec, "samples_per_s"), 60000 / 0.61, 1e-3);  // 10 digits
  EXPECT_NEAR(num_field(rec, "comm_share"), 0.12, 1e-12);
  sum.has_accuracy = false;
  EXPECT_NE(summary_record(sum).find("\"test_accuracy\":null"), std::string::npos);
}

TEST(Summary, LineFromTheRanksTotals) {
  RunSummary s = make_run_summary(4, "gloo", "auto", 1, 235, 4 * 0.61, 4 * 0.61 * 0.12, 59780, true, 0.9412);
  EXPECT_EQ(summary_line(s),
            "train: summary: world_size=4 backend=gloo algorithm=auto epochs=1 steps=235 train_s=0.61 epoch_s=0.61 "
            "samples_per_s=98000 comm_share=12.0% test_accuracy=94.12%");
  RunSummary partial = make_run_summary(1, "single", "auto", 0, 3, 0.01, 0, 192, false, 0);
  EXPECT_EQ(summary_line(partial),
            "train: summary: world_size=1 backend=single algorithm=auto epochs=0 steps=3 train_s=0.01 epoch_s=n/a "
            "samples_per_s=19200 comm_share=0.0% test_accuracy=n/a");
  RunSummary two = make_run_summary(2, "mpi", "auto", 2, 100, 2 * 3.0, 0.6, 120000, true, 0.97);
  EXPECT_NE(summary_line(two).find(" epoch_s=1.50 samples_per_s=40000 comm_share=10.0% test_accuracy=97.00%"),
            std::string::npos);
}

// ---- real runs ----------------------------------------------------------------------------

class MetricsRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("metrics");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
};

// The lines of one rank's stdout from a ./launch run, tag removed, in order.
std::vector<std::string> rank_lines(const std::string& out, int rank) {
  const std::string tag = "[" + std::to_string(rank) + "]<stdout>:";
  std::vector<std::string> lines;
  for (const std::string& l : lines_of(out))
    if (l.rfind(tag, 0) == 0) lines.push_back(l.substr(tag.size()));
  return lines;
}

TEST_F(MetricsRun, TwoGlooRanksTwoEpochsFile) {
  const std::string F = dir + "/m.jsonl";
  // 30000 samples per rank in batches of 256: 118 steps per epoch; logged at batches 0, 50, 100.
  auto r = testutil::run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() +
                             " --epochs 2 --batch-size 256 --log-interval 50 --metrics " + F,
                         900);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::vector<std::string> lines = lines_of(testutil::read_file(F));
  ASSERT_GE(lines.size(), 3u);
  for (const std::string& l : lines) ASSERT_TRUE(jsoncheck::valid_json(l)) << l;
  // Header first, exactly once.
  EXPECT_EQ(raw_field(lines[0], "type"), "header");
  EXPECT_EQ(int_field(lines[0], "world_size"), 2);
  EXPECT_EQ(raw_field(lines[0], "backend"), "gloo");
  EXPECT_NE(lines[0].find(R"("hosts":[")"), std::string::npos);
  EXPECT_NE(lines[0].find(R"("gloo":"yes")"), std::string::npos);
  EXPECT_NE(lines[0].find(R"("batch_size":256,)"), std::string::npos);
  // Then, per epoch, the step records of both ranks at each logged batch, then the test record.
  std::vector<std::string> expected_types;
  std::vector<std::string> got;
  for (const std::string& l : lines) got.push_back(raw_field(l, "type"));
  expected_types.push_back("header");
  for (int e = 1; e <= 2; ++e) {
    for (int k = 0; k < 3 * 2; ++k) expected_types.push_back("step");
    expected_types.push_back("test");
  }
  expected_types.push_back("summary");
  ASSERT_EQ(got, expected_types);
  // Losses: rank r's Train lines on stdout, in the same order.
  std::vector<std::vector<std::string>> train_lines(2);
  for (int k = 0; k < 2; ++k)
    for (const std::string& l : rank_lines(r.out, k))
      if (l.rfind("Train Epoch", 0) == 0) train_lines[k].push_back(l);
  ASSERT_EQ(train_lines[0].size(), 6u) << r.out;
  size_t at = 1;
  int seen[2] = {0, 0};
  for (int e = 1; e <= 2; ++e) {
    for (int b : {0, 50, 100}) {
      std::vector<std::string> pair = {lines[at], lines[at + 1]};
      at += 2;
      for (int k = 0; k < 2; ++k) {
        const std::string& l = pair[k];
        EXPECT_EQ(int_field(l, "epoch"), e) << l;
        EXPECT_EQ(int_field(l, "batch"), b) << l;
        EXPECT_EQ(int_field(l, "step"), (e - 1) * 118 + b) << l;
        EXPECT_EQ(int_field(l, "rank"), k) << l;
        EXPECT_DOUBLE_EQ(num_field(l, "lr"), 0.02) << l;
        EXPECT_EQ(int_field(l, "allreduce_bytes"), 87360) << l;
        EXPECT_GT(num_field(l, "grad_norm"), 0) << l;
        EXPECT_GT(num_field(l, "compute_s"), 0) << l;
        EXPECT_GE(num_field(l, "step_s"), num_field(l, "data_s") + num_field(l, "compute_s") + num_field(l, "comm_s"))
            << l;
        EXPECT_NEAR(num_field(l, "samples_per_s"), 256 / num_field(l, "step_s"), 1e-6 * num_field(l, "samples_per_s"));
        char loss[32];
        std::snprintf(loss, sizeof loss, "Loss: %.6f", num_field(l, "loss"));
        EXPECT_NE(train_lines[k][size_t(seen[k])].find(loss), std::string::npos)
            << train_lines[k][size_t(seen[k])] << " vs " << l;
        ++seen[k];
        // comm_s splits into wait, transfer and descheduled (src/comm_split.h), rounded to 10 digits.
        EXPECT_NEAR(num_field(l, "wait_s") + num_field(l, "transfer_s") + num_field(l, "descheduled_s"),
                    num_field(l, "comm_s"), 1e-9 * (1 + num_field(l, "comm_s") * 1e3))
            << l;
      }
      // The last rank to arrive waited for nobody; the first arrived at 0.
      EXPECT_DOUBLE_EQ(std::min(num_field(pair[0], "wait_s"), num_field(pair[1], "wait_s")), 0);
      EXPECT_DOUBLE_EQ(std::min(num_field(pair[0], "arrive_s"), num_field(pair[1], "arrive_s")), 0);
    }
    const std::string& t = lines[at++];
    EXPECT_EQ(int_field(t, "epoch"), e) << t;
    EXPECT_EQ(int_field(t, "step"), e * 118) << t;
    char acc[64];
    std::snprintf(acc, sizeof acc, "Accuracy: %.2f%%", 100 * num_field(t, "accuracy"));
    EXPECT_NE(r.out.find(acc), std::string::npos) << acc << "\n" << r.out;
  }
  const std::string& s = lines.back();
  EXPECT_EQ(int_field(s, "world_size"), 2);
  EXPECT_EQ(int_field(s, "epochs"), 2);
  EXPECT_EQ(int_field(s, "steps"), 236);
  EXPECT_DOUBLE_EQ(num_field(s, "test_accuracy"), num_field(lines[lines.size() - 2], "accuracy"));
  EXPECT_GT(num_field(s, "comm_share"), 0);
  EXPECT_LT(num_field(s, "comm_share"), 1);
  // The summary line on rank 0's stderr agrees with the record.
  char acc[64];
  std::snprintf(acc, sizeof acc, "test_accuracy=%.2f%%", 100 * num_field(s, "test_accuracy"));
  std::regex line(R"(\[0\]<stderr>:train: summary: world_size=2 backend=gloo algorithm=auto epochs=2 steps=236 )"
                  R"(train_s=[0-9.]+ epoch_s=[0-9.]+ samples_per_s=[0-9]+ comm_share=[0-9.]+% )" +
                  std::string(acc) + "\n");
  EXPECT_TRUE(std::regex_search(r.err, line)) << r.err;
  EXPECT_EQ(r.err.find("[1]<stderr>:train: summary"), std::string::npos);
}

TEST_F(MetricsRun, MpiHeaderNamesTheMpiLibraryVersion) {
  const std::string F = dir + "/mpi.jsonl";
  auto r = testutil::run(testutil::launch_bin() + " -np 2 --mpi " + testutil::train_bin() +
                             " --max-steps 2 --log-interval 1 --metrics " + F,
                         300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::vector<std::string> lines = lines_of(testutil::read_file(F));
  ASSERT_EQ(lines.size(), 1u + 2 * 2 + 1) << testutil::read_file(F);  // header, 2 steps x 2 ranks, summary
  EXPECT_EQ(raw_field(lines[0], "backend"), "mpi");
  EXPECT_EQ(raw_field(lines[0], "mpi").rfind("Open MPI v", 0), 0u) << lines[0];
  EXPECT_EQ(raw_field(lines.back(), "type"), "summary");
  EXPECT_EQ(raw_field(lines.back(), "test_accuracy"), "null");
  EXPECT_NE(r.err.find("[0]<stderr>:train: summary: world_size=2 backend=mpi "), std::string::npos) << r.err;
}

TEST_F(MetricsRun, UnwritablePathStopsEveryRankBeforeTraining) {
  auto one = testutil::run(testutil::train_bin() + " --metrics /nonexistent/m.jsonl", 60);
  EXPECT_EQ(one.status, 1);
  EXPECT_EQ(one.err,
            "train: error: /nonexistent/m.jsonl: --metrics file cannot be created: No such file or directory\n");
  EXPECT_EQ(one.out, "");
  // Rank 0's reason is printed before rank 1 learns of it and exits (which makes the launcher stop
  // the job), so it is never lost; five runs, since losing it was a race.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto two =
        testutil::run(testutil::launch_bin() + " -np 2 --gloo " + testutil::train_bin() + " --metrics " + dir, 120);
    EXPECT_NE(two.status, 0);
    EXPECT_NE(two.err.find("[0]<stderr>:train: error: " + dir + ": --metrics file cannot be created: Is a directory"),
              std::string::npos)
        << "attempt " << attempt << ": " << two.err;
    EXPECT_EQ(two.out.find("Train Epoch"), std::string::npos) << two.out;
  }
}

TEST_F(MetricsRun, SummaryOnStderrAndStdoutUnchangedByTheNewFlags) {
  const std::string train = testutil::train_bin();
  // One rank, a whole epoch (60 batches of 1000) so the Test lines are compared too.
  const std::string args = " --epochs 1 --batch-size 1000 --log-interval 10";
  auto plain = testutil::run(train + args, 600);
  auto seen = testutil::run(train + args + " --metrics " + dir + "/m.jsonl --inspect 0,59 --check-sync 1", 600);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(seen.status, 0) << seen.err;
  EXPECT_EQ(seen.out, plain.out);
  EXPECT_NE(plain.out.find("Test set: Average loss:"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(plain.out, m, std::regex(R"(Accuracy: ([0-9.]+%))")));
  std::regex summary(
      "^train: summary: world_size=1 backend=single algorithm=auto epochs=1 steps=60 train_s=[0-9.]+ "
      "epoch_s=[0-9.]+ samples_per_s=[0-9]+ comm_share=0.0% test_accuracy=" +
      m[1].str() + "\n$");
  EXPECT_TRUE(std::regex_search(plain.err, summary)) << plain.err;
  EXPECT_NE(seen.err.find("inspect: step 59 (epoch 1, batch 59)"), std::string::npos) << seen.err;
  // Two Gloo ranks: each rank's stdout lines, in order, as without the flags.
  const std::string launch = testutil::launch_bin() + " -np 2 --gloo " + train + " --max-steps 30 --log-interval 5";
  auto p2 = testutil::run(launch, 300);
  auto s2 = testutil::run(launch + " --metrics " + dir + "/m2.jsonl --inspect 0,5 --check-sync 1", 300);
  ASSERT_EQ(p2.status, 0) << p2.err;
  ASSERT_EQ(s2.status, 0) << s2.err;
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(rank_lines(s2.out, k), rank_lines(p2.out, k)) << "rank " << k;
    EXPECT_EQ(rank_lines(p2.out, k).size(), 6u) << p2.out;
  }
  EXPECT_EQ(s2.out.size(), p2.out.size());
}

}  // namespace
