// test_timeline_steps: issue 24's "the algorithm, visible" and "cost, stated and checked". The
// closed form of our ring and halving-doubling (src/allreduce_plan.h) against hand-worked steps;
// then real 4-rank runs whose trace holds every algorithm step as its own slice with the peer,
// chunk, float range, layers and bytes the closed form gives, flows that carry chunk, bytes and
// step, call slices whose counted bytes equal the formula with an alpha-beta prediction, and the
// other traffic (start-up broadcast, clock sync, --check-sync, the test-metric allreduce).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/allreduce_plan.h"
#include "src/net.h"
#include "tests/mini_json.h"
#include "tests/test_util.h"

namespace {

using minijson::Value;

const PlannedStep* step_of(const std::vector<PlannedStep>& plan, int step) {
  for (const PlannedStep& s : plan)
    if (s.step == step) return &s;
  return nullptr;
}

TEST(AllreducePlan, RingStepsByHand) {
  // W = 4, N = 21840: chunks of 5460; rank r sends chunk (r-s) mod 4 to r+1 at step s.
  const std::vector<PlannedStep> p = planned_steps(AllreduceAlgorithm::kRing, 4, 0, 21840);
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].phase, "reduce-scatter");
  EXPECT_EQ(p[0].send_to, 1);
  EXPECT_EQ(p[0].recv_from, 3);
  EXPECT_EQ(p[0].send_chunk, 0);
  EXPECT_EQ(p[0].recv_chunk, 3);
  EXPECT_EQ(p[0].send_lo, 0u);
  EXPECT_EQ(p[0].send_hi, 5460u);
  EXPECT_EQ(p[0].recv_lo, 16380u);
  EXPECT_EQ(p[0].recv_hi, 21840u);
  EXPECT_EQ(p[1].send_chunk, 3);  // the chunk it just added to goes on
  EXPECT_EQ(p[2].recv_chunk, 1);  // after 3 steps rank 0 holds the sum of chunk 1
  EXPECT_EQ(p[3].phase, "allgather");
  EXPECT_EQ(p[3].phase_step, 1);
  EXPECT_EQ(p[3].send_chunk, 1);
  EXPECT_EQ(p[3].recv_chunk, 0);
  // N = 10 over 4: chunks of 3, 3, 2, 2
  const std::vector<PlannedStep> q = planned_steps(AllreduceAlgorithm::kRing, 4, 2, 10);
  EXPECT_EQ(q[0].send_chunk, 2);
  EXPECT_EQ(q[0].send_lo, 6u);
  EXPECT_EQ(q[0].send_hi, 8u);
  EXPECT_EQ(q[0].recv_lo, 3u);  // chunk 1
  EXPECT_EQ(q[0].recv_hi, 6u);
  EXPECT_EQ(phase_position(AllreduceAlgorithm::kRing, 4, 0), "reduce-scatter 1/3");
  EXPECT_EQ(phase_position(AllreduceAlgorithm::kRing, 4, 5), "allgather 3/3");
  EXPECT_EQ(phase_position(AllreduceAlgorithm::kRing, 4, 6), "");
}

TEST(AllreducePlan, HalvingDoublingStepsByHand) {
  // W = 4, rank 1: level 0 pairs with 0 and keeps the upper half; level 1 pairs with 3 and keeps
  // the lower half of that (piece 2 of 4); the allgather sends back what it kept.
  const std::vector<PlannedStep> p = planned_steps(AllreduceAlgorithm::kHalvingDoubling, 4, 1, 21840);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].send_to, 0);
  EXPECT_EQ(p[0].parts, 2);
  EXPECT_EQ(p[0].send_chunk, 0);
  EXPECT_EQ(p[0].send_hi, 10920u);
  EXPECT_EQ(p[0].recv_chunk, 1);
  EXPECT_EQ(p[1].send_to, 3);
  EXPECT_EQ(p[1].parts, 4);
  EXPECT_EQ(p[1].recv_chunk, 2);
  EXPECT_EQ(p[1].recv_lo, 10920u);
  EXPECT_EQ(p[1].recv_hi, 16380u);
  EXPECT_EQ(p[1].send_lo, 16380u);
  EXPECT_EQ(p[2].phase, "allgather");
  EXPECT_EQ(p[2].send_to, 3);
  EXPECT_EQ(p[2].send_chunk, 2);
  EXPECT_EQ(p[2].recv_chunk, 3);
  EXPECT_EQ(p[3].send_to, 0);
  EXPECT_EQ(p[3].send_lo, 10920u);
  EXPECT_EQ(p[3].send_hi, 21840u);
  EXPECT_EQ(p[3].recv_hi, 10920u);
  // W = 6: P = 4; rank 5 folds into rank 1 at step 0 and gets the result back at step 5.
  const std::vector<PlannedStep> f = planned_steps(AllreduceAlgorithm::kHalvingDoubling, 6, 5, 100);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].phase, "fold");
  EXPECT_EQ(f[0].send_to, 1);
  EXPECT_EQ(f[0].recv_from, -1);
  EXPECT_EQ(f[1].phase, "unfold");
  EXPECT_EQ(f[1].step, 5);
  EXPECT_EQ(f[1].recv_from, 1);
  EXPECT_EQ(f[1].recv_hi, 100u);
  EXPECT_EQ(planned_steps(AllreduceAlgorithm::kHalvingDoubling, 6, 1, 100).size(), 6u);
  EXPECT_EQ(planned_steps(AllreduceAlgorithm::kHalvingDoubling, 6, 2, 100).size(), 4u);
  EXPECT_EQ(phase_position(AllreduceAlgorithm::kHalvingDoubling, 6, 0), "fold 1/1");
  EXPECT_EQ(phase_position(AllreduceAlgorithm::kHalvingDoubling, 6, 3), "allgather 1/2");
  EXPECT_EQ(phase_position(AllreduceAlgorithm::kHalvingDoubling, 4, 1), "reduce-scatter 2/2");
}

TEST(AllreducePlan, LayersOfARange) {
  // conv1.weight [0,250) conv1.bias [250,260) conv2.weight [260,5260) conv2.bias [5260,5280)
  // fc1.weight [5280,21280) fc1.bias [21280,21330) fc2.weight [21330,21830) fc2.bias [21830,21840)
  EXPECT_EQ(layers_covering(0, 5460), "conv1.weight+conv1.bias+conv2.weight+conv2.bias+fc1.weight");
  EXPECT_EQ(layers_covering(5460, 10920), "fc1.weight");
  EXPECT_EQ(layers_covering(16380, 21840), "fc1.weight+fc1.bias+fc2.weight+fc2.bias");
  EXPECT_EQ(layers_covering(250, 260), "conv1.bias");
  EXPECT_EQ(layers_covering(7, 7), "");
}

TEST(AllreducePlan, CostFormulaAndAlphaBetaPrediction) {
  // 21840 floats = 87360 B over 4 ranks: 2 x 3/4 x 87360 = 131040 B each way.
  const AllreduceCost ring = allreduce_cost(AllreduceAlgorithm::kRing, 4, 2, 21840, 4, 10, 0.001);
  EXPECT_EQ(ring.messages, 6);
  EXPECT_EQ(ring.sent, 131040u);
  EXPECT_EQ(ring.received, 131040u);
  EXPECT_EQ(ring.formula, "2(W-1)/W x N = 2x3/4 x 87360 B = 131040 B sent");
  EXPECT_NEAR(ring.predicted_us, 6 * 10 + 131.04, 1e-9);  // 2(W-1) alpha + 2(W-1)/W N beta
  EXPECT_EQ(ring.model, "2(W-1) alpha + 2(W-1)/W N beta = 191.04 us at alpha 10 us, beta 1 ns/B");
  const AllreduceCost hd = allreduce_cost(AllreduceAlgorithm::kHalvingDoubling, 4, 2, 21840, 4, 10, 0.001);
  EXPECT_EQ(hd.messages, 4);
  EXPECT_EQ(hd.sent, 131040u);
  EXPECT_NEAR(hd.predicted_us, 4 * 10 + 131.04, 1e-9);  // 2 log2(W) alpha + ...
  // W = 8, halves: 2 x 7/8 x 43680 = 76440 B
  EXPECT_EQ(allreduce_cost(AllreduceAlgorithm::kHalvingDoubling, 8, 5, 21840, 2, 0, 0).sent, 76440u);
  // W = 6: rank 0 receives the fold and sends the unfold on top of P = 4's butterfly.
  const AllreduceCost six = allreduce_cost(AllreduceAlgorithm::kHalvingDoubling, 6, 0, 400, 4, 0, 0);
  EXPECT_EQ(six.sent, 2400u + 1600u);  // 2 x 3/4 x 1600 B, then the whole 1600 B back to rank 4
  EXPECT_EQ(six.formula, "2(P-1)/P x N + N (unfold), P = 4 = 4000 B sent");
  EXPECT_EQ(allreduce_cost(AllreduceAlgorithm::kDirect, 3, 0, 100, 4, 0, 0).sent, 800u);
}

// ---- real runs ----------------------------------------------------------------------------

class TimelineStepsRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    dir = testutil::make_temp_dir("tlsteps");
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::vector<Value> trace_of(const std::string& algorithm, const std::string& extra) {
    const std::string file = dir + "/" + algorithm + ".json";
    auto r = testutil::run(testutil::launch_bin() + " -np 4 --gloo " + testutil::train_bin() + " --allreduce " +
                               algorithm + " --timeline " + file + " " + extra,
                           600);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    try {
      return minijson::parse(testutil::read_file(file)).arr;
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": " << e.what();
      return {};
    }
  }
  std::string dir;
};

// Every step slice of every rank and call is the closed form's step: name, peers, chunks, float
// ranges, layers, bytes; its flow ends carry the same chunk, bytes and step; each call's counted
// bytes equal the formula's and it states the alpha-beta prediction.
void check_steps_against_closed_form(const std::vector<Value>& ev, AllreduceAlgorithm a, const std::string& alg,
                                     int calls) {
  const int W = 4;
  const size_t N = Net::kNumParams;
  std::map<std::tuple<int, int, int>, const Value*> slices;              // (rank, call, algo_step)
  std::map<std::pair<int, long long>, std::vector<const Value*>> flows;  // (rank, id)
  int call_slices = 0;
  for (const Value& e : ev) {
    if (e["ph"].s() == "s" || e["ph"].s() == "f") flows[{int(e["pid"].n()), (long long)e["id"].n()}].push_back(&e);
    if (e["ph"].s() != "X" || !e.has("args")) continue;
    const Value& args = e["args"];
    if (args.has("algo_step")) {
      const auto key = std::make_tuple(int(e["pid"].n()), int(args["call"].n()), int(args["algo_step"].n()));
      EXPECT_EQ(slices.count(key), 0u) << "two slices for one step: " << e["name"].s();
      slices[key] = &e;
    }
    if (e["name"].s() == alg + " allreduce") {
      ++call_slices;
      const int rank = int(e["pid"].n());
      const AllreduceCost cost = allreduce_cost(a, W, rank, N, 4, 0, 0);
      EXPECT_EQ(args["bytes_sent"].n(), double(cost.sent)) << "rank " << rank;
      EXPECT_EQ(args["bytes_sent"].n(), 131040);  // 2(W-1)/W x 87360
      EXPECT_EQ(args["bytes_received"].n(), 131040);
      EXPECT_EQ(args["closed_form_bytes_sent"].n(), 131040);
      EXPECT_EQ(args["messages"].n(), a == AllreduceAlgorithm::kRing ? 6 : 4);
      EXPECT_EQ(args["closed_form"].s(), "2(W-1)/W x N = 2x3/4 x 87360 B = 131040 B sent");
      const std::string model = a == AllreduceAlgorithm::kRing ? "2(W-1) alpha" : "2 log2(W) alpha";
      EXPECT_EQ(args["alpha_beta"].s().rfind(model + " + 2(W-1)/W N beta = ", 0), 0u) << args["alpha_beta"].s();
      EXPECT_GT(args["predicted_us"].n(), 0);
      EXPECT_EQ(args["measured_us"].n(), e["dur"].n());
    }
  }
  EXPECT_EQ(call_slices, calls * W);
  const size_t per_call = a == AllreduceAlgorithm::kRing ? 6 : 4;
  EXPECT_EQ(slices.size(), size_t(calls * W) * per_call);
  for (int rank = 0; rank < W; ++rank)
    for (int call = 0; call < calls; ++call)
      for (const PlannedStep& p : planned_steps(a, W, rank, N)) {
        const std::string at =
            "rank " + std::to_string(rank) + " call " + std::to_string(call) + " step " + std::to_string(p.step);
        auto it = slices.find({rank, call, p.step});
        ASSERT_NE(it, slices.end()) << at;
        const Value& e = *it->second;
        const Value& args = e["args"];
        EXPECT_EQ(e["name"].s(),
                  alg + " " + p.phase + " " + std::to_string(p.phase_step) + "/" + std::to_string(p.phase_steps))
            << at;
        EXPECT_EQ(args["algorithm"].s(), alg);
        EXPECT_EQ(args["phase"].s(), p.phase) << at;
        EXPECT_EQ(args["send_to"].n(), p.send_to) << at;
        EXPECT_EQ(args["recv_from"].n(), p.recv_from) << at;
        EXPECT_EQ(args["parts"].n(), p.parts) << at;
        EXPECT_EQ(args["send_chunk"].n(), p.send_chunk) << at;
        EXPECT_EQ(args["recv_chunk"].n(), p.recv_chunk) << at;
        EXPECT_EQ(args["send_lo"].n(), double(p.send_lo)) << at;
        EXPECT_EQ(args["send_hi"].n(), double(p.send_hi)) << at;
        EXPECT_EQ(args["recv_lo"].n(), double(p.recv_lo)) << at;
        EXPECT_EQ(args["recv_hi"].n(), double(p.recv_hi)) << at;
        EXPECT_EQ(args["send_layers"].s(), layers_covering(p.send_lo, p.send_hi)) << at;
        EXPECT_EQ(args["recv_layers"].s(), layers_covering(p.recv_lo, p.recv_hi)) << at;
        EXPECT_EQ(args["bytes_sent"].n(), double(4 * (p.send_hi - p.send_lo))) << at;
        EXPECT_EQ(args["bytes_received"].n(), double(4 * (p.recv_hi - p.recv_lo))) << at;
      }
  // Every flow end: its chunk, bytes and step are the sending slice's.
  size_t ends = 0;
  for (auto& [key, list] : flows)
    for (const Value* f : list) {
      ++ends;
      const Value& args = (*f)["args"];
      const int from = int(args["from_rank"].n()), to = int(args["to_rank"].n()), step = int(args["algo_step"].n());
      EXPECT_EQ(int((*f)["pid"].n()), (*f)["ph"].s() == "s" ? from : to);
      const PlannedStep* p = step_of(planned_steps(a, W, from, N), step);
      ASSERT_NE(p, nullptr) << "flow of rank " << from << " step " << step;
      EXPECT_EQ(p->send_to, to);
      EXPECT_EQ(args["chunk"].n(), p->send_chunk);
      EXPECT_EQ(args["parts"].n(), p->parts);
      EXPECT_EQ(args["bytes"].n(), double(4 * (p->send_hi - p->send_lo)));
      EXPECT_NE((*f)["name"].s().find(": chunk " + std::to_string(p->send_chunk) + " ("), std::string::npos)
          << (*f)["name"].s();
      EXPECT_EQ((*f)["name"].s().find("pid"), std::string::npos);
    }
  EXPECT_EQ(ends, 2 * size_t(calls * W) * per_call);  // a send and a receive per message
}

// The other traffic on each rank's comm track, and the ping-pong's alpha and beta.
void check_traffic(const std::vector<Value>& ev, const std::set<std::string>& names) {
  std::map<std::pair<int, std::string>, int> seen;
  for (const Value& e : ev)
    if (e["ph"].s() == "X" && e["cat"].s() == "comm" && names.count(e["name"].s())) {
      ++seen[{int(e["pid"].n()), e["name"].s()}];
      EXPECT_EQ(int(e["tid"].n()), 1000) << e["name"].s();
      if (e["name"].s().rfind("start-up broadcast: ", 0) == 0) {
        EXPECT_EQ(e["args"]["bytes"].n(), 87360) << e["name"].s();
      }
    }
  for (int r = 0; r < 4; ++r)
    for (const std::string& n : names) EXPECT_GE((seen[{r, n}]), 1) << "rank " << r << ": no '" << n << "'";
  for (const Value& e : ev)
    if (e["ph"].s() == "M" && e["name"].s() == "clock_sync") {
      EXPECT_GT(e["args"]["alpha_us"].n(), 0);
      EXPECT_GE(e["args"]["beta_ns_per_byte"].n(), 0);
      return;
    }
  ADD_FAILURE() << "no clock_sync metadata";
}

TEST_F(TimelineStepsRun, FourRankRingTraceHoldsEveryStepOfTheClosedForm) {
  const std::vector<Value> ev = trace_of("ring", "--max-steps 2 --check-sync 1");
  ASSERT_FALSE(ev.empty());
  check_steps_against_closed_form(ev, AllreduceAlgorithm::kRing, "ring", 2);
  check_traffic(ev, {"start-up broadcast: parameters", "start-up broadcast: momentum", "clock sync ping-pong",
                     "check-sync allgather", "stop vote allreduce"});
}

TEST_F(TimelineStepsRun, FourRankHalvingDoublingTraceHoldsEveryStepOfTheClosedForm) {
  // One short epoch (4 steps of up to 4096 samples per rank), so the test pass's metric allreduce runs.
  const std::vector<Value> ev = trace_of("halving-doubling", "--epochs 1 --batch-size 4096 --log-interval 100");
  ASSERT_FALSE(ev.empty());
  check_steps_against_closed_form(ev, AllreduceAlgorithm::kHalvingDoubling, "halving-doubling", 4);
  check_traffic(ev, {"start-up broadcast: parameters", "clock sync ping-pong", "test-metric allreduce"});
}

// Adasum (case 6: no longer one opaque slice): its levels are step slices with halving-doubling's
// pieces, and its local optimizer step is a slice inside the exchange.
TEST_F(TimelineStepsRun, FourRankAdasumShowsItsLevelsAndItsLocalStep) {
  const std::vector<Value> ev = trace_of("auto", "--use-adasum --max-steps 1");
  ASSERT_FALSE(ev.empty());
  std::map<std::pair<int, int>, const Value*> levels;  // (rank, algo_step)
  std::map<int, const Value*> exchange, local;
  for (const Value& e : ev) {
    if (e["ph"].s() != "X" || !e.has("args") || e["args"]["step"].n() != 0) continue;
    const int rank = int(e["pid"].n());
    if (e["args"].has("algo_step") && e["args"]["algorithm"].s() == "adasum")
      levels[{rank, int(e["args"]["algo_step"].n())}] = &e;
    if (e["name"].s() == "allreduce") exchange[rank] = &e;
    if (e["name"].s() == "optimizer step") local[rank] = &e;
  }
  EXPECT_EQ(levels.size(), 16u);  // 2 halving + 2 doubling levels on each of 4 ranks
  for (int rank = 0; rank < 4; ++rank) {
    for (const PlannedStep& p : planned_steps(AllreduceAlgorithm::kHalvingDoubling, 4, rank, Net::kNumParams)) {
      const Value* e = levels[{rank, p.step}];
      ASSERT_NE(e, nullptr) << "rank " << rank << " level step " << p.step;
      EXPECT_EQ((*e)["name"].s(), "adasum " + p.phase + " " + std::to_string(p.phase_step) + "/2");
      EXPECT_EQ((*e)["args"]["send_to"].n(), p.send_to);
      EXPECT_EQ((*e)["args"]["send_chunk"].n(), p.send_chunk);
      EXPECT_EQ((*e)["args"]["send_lo"].n(), double(p.send_lo));
      EXPECT_EQ((*e)["args"]["recv_hi"].n(), double(p.recv_hi));
      EXPECT_EQ((*e)["args"]["bytes_sent"].n(), double(4 * (p.send_hi - p.send_lo)));
    }
    ASSERT_NE(exchange[rank], nullptr);
    ASSERT_NE(local[rank], nullptr) << "rank " << rank << ": no local optimizer step slice";
    const double b = (*exchange[rank])["ts"].n(), e = b + (*exchange[rank])["dur"].n();
    EXPECT_GE((*local[rank])["ts"].n(), b);
    EXPECT_LE((*local[rank])["ts"].n() + (*local[rank])["dur"].n(), e + 0.002);
  }
}

}  // namespace
