// test_resume_plan: --resume's decision without files or ranks (src/resume_plan.h): which
// checkpoint continues, the run id it continues as, where it continues (another --batch-size's
// batch, another world size's sample), the refusals, and every note line in order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/resume_plan.h"

namespace {

const std::string kRun = "0123456789abcdef", kNewRun = "fedcba9876543210";

Options two_rank_options() {
  Options o;
  o.checkpoint_dir = "/ck";
  o.resume = true;
  return o;
}

// A checkpoint this run's configuration wrote on `world` ranks after `batch` batches of epoch 1.
TrainState checkpoint_of(const RunConfig& now, int world, int64_t batch) {
  TrainState st;
  st.world_size = world;
  st.batch_size = now.batch_size;
  st.seed = now.seed;
  st.epoch = 1;
  st.batch = batch;
  st.step = batch;
  st.run_id = kRun;
  st.has_settings = true;
  st.settings = now.settings;
  return st;
}

ResumeCandidates matching(const TrainState& st) {
  ResumeCandidates c;
  c.have_match = true;
  c.match = st;
  c.match_path = "/ck/a.bin";
  return c;
}

ResumeCandidates other(const TrainState& st) {
  ResumeCandidates c;
  c.have_other = true;
  c.other = st;
  c.other_path = "/ck/b.bin";
  return c;
}

TEST(ResumePlan, NoCheckpointAtAllStartsFromTheBeginning) {
  const Options opts = two_rank_options();
  const ResumePlan p = plan_resume(opts, run_config_now(opts, 2, 1), {}, {}, kNewRun);
  EXPECT_FALSE(p.resumed);
  EXPECT_EQ(p.refusal, "");
  EXPECT_EQ(p.notes, (std::vector<std::string>{"train: no checkpoint in /ck; starting from the beginning"}));
}

TEST(ResumePlan, CheckpointsThatAreAllUnusableRefuseUnlessAskedToStartFresh) {
  Options opts = two_rank_options();
  const ResumePlan p = plan_resume(opts, run_config_now(opts, 2, 1), {}, {"/ck/c.bin: bad CRC"}, kNewRun);
  EXPECT_FALSE(p.resumed);
  EXPECT_EQ(p.refusal,
            "train: --resume: none of the 1 checkpoint file(s) in /ck is usable (see the warnings above); pass "
            "--resume-fresh to start from the beginning anyway");
  EXPECT_EQ(p.notes, (std::vector<std::string>{"train: warning: /ck/c.bin: bad CRC"}));
  opts.resume_fresh = true;
  const ResumePlan fresh = plan_resume(opts, run_config_now(opts, 2, 1), {}, {"/ck/c.bin: bad CRC"}, kNewRun);
  EXPECT_EQ(fresh.refusal, "");
  EXPECT_EQ(fresh.notes, (std::vector<std::string>{"train: warning: /ck/c.bin: bad CRC",
                                                   "train: no usable checkpoint in /ck; starting from the beginning"}));
}

TEST(ResumePlan, TheSameConfigurationContinuesItsRunWhereItStopped) {
  const Options opts = two_rank_options();
  const RunConfig now = run_config_now(opts, 2, 1);
  const ResumePlan p = plan_resume(opts, now, matching(checkpoint_of(now, 2, 30)), {}, kNewRun);
  ASSERT_TRUE(p.resumed);
  EXPECT_EQ(p.refusal, "");
  EXPECT_EQ(p.run_id, kRun);
  EXPECT_EQ(p.path, "/ck/a.bin");
  EXPECT_EQ(p.state.batch, 30);
  EXPECT_EQ(p.state.epoch_first_sample, 0);
  EXPECT_EQ(p.notes,
            (std::vector<std::string>{"train: resuming from /ck/a.bin (epoch 1, batch 30, step 30), run " + kRun}));
}

TEST(ResumePlan, AnotherConfigurationIsRefusedUnlessResumeAnyConfigThenItIsANewRunAtThisSizesBatch) {
  Options opts = two_rank_options();
  const RunConfig now = run_config_now(opts, 2, 1);
  TrainState st = checkpoint_of(now, 2, 30);
  st.batch_size = 32;  // 30 batches of 32: 960 samples, 15 batches of this run's 64
  ResumePlan p = plan_resume(opts, now, other(st), {}, kNewRun);
  EXPECT_FALSE(p.resumed);
  EXPECT_EQ(p.refusal,
            "checkpoint /ck/b.bin was written with --batch-size 32, this run has --batch-size 64 (resume needs the "
            "same configuration; --resume-any-config continues it anyway)");
  EXPECT_TRUE(p.notes.empty());

  opts.resume_any_config = true;
  p = plan_resume(opts, now, other(st), {}, kNewRun);
  ASSERT_TRUE(p.resumed);
  EXPECT_EQ(p.run_id, kNewRun);
  EXPECT_EQ(p.state.batch, 15);
  ASSERT_EQ(p.notes.size(), 2u);
  EXPECT_EQ(p.notes[1],
            "train: --resume-any-config: continuing /ck/b.bin with --batch-size 64 instead of "
            "--batch-size 32 as new run " +
                kNewRun + "; batch 30 of --batch-size 32 continues at batch 15 of --batch-size 64");
  EXPECT_EQ(batch_for_new_size(st, 7), 138) << "960 samples done: batch 137 of 7 holds the last of them";
}

TEST(ResumePlan, AnotherWorldSizeContinuesTheEpochAtItsFirstUntrainedSample) {
  const Options opts = two_rank_options();
  const RunConfig now = run_config_now(opts, 2, 1);
  const ResumePlan p = plan_resume(opts, now, matching(checkpoint_of(now, 4, 30)), {}, kNewRun);
  ASSERT_TRUE(p.resumed);
  EXPECT_EQ(p.run_id, kRun) << "another world size continues the same run";
  EXPECT_EQ(p.state.epoch_first_sample, 30 * 64 * 4);
  EXPECT_EQ(p.state.batch, 0);
  EXPECT_EQ(p.state.world_size, 2);
  ASSERT_EQ(p.notes.size(), 2u);
  EXPECT_EQ(p.notes[1],
            "train: continuing epoch 1 at sample 7680 on 2 ranks (the checkpoint was written by 4): the epoch's "
            "remaining samples are dealt over this world; lr 0.02 (--lr x 2)");
}

TEST(ResumePlan, EveryRanksOwnAdasumMomentumCannotMoveToAnotherWorldSize) {
  Options opts = two_rank_options();
  opts.use_adasum = true;
  const RunConfig now = run_config_now(opts, 2, 1);
  TrainState st = checkpoint_of(now, 4, 3);
  st.momentum_buffers = 4;
  const ResumePlan p = plan_resume(opts, now, matching(st), {}, kNewRun);
  EXPECT_FALSE(p.resumed);
  EXPECT_EQ(p.refusal,
            "checkpoint /ck/a.bin holds each of its 4 ranks' own --use-adasum momentum; it cannot continue on 2 ranks "
            "(Adasum keeps one momentum buffer per rank)");
}

TEST(ResumePlan, AVersion3CheckpointContinuesAsANewRunAndSaysWhatWasNotCompared) {
  const Options opts = two_rank_options();
  const RunConfig now = run_config_now(opts, 2, 1);
  TrainState st = checkpoint_of(now, 2, 4);
  st.run_id.clear();
  st.has_settings = false;
  st.version = 3;
  const ResumePlan p = plan_resume(opts, now, matching(st), {}, kNewRun);
  ASSERT_TRUE(p.resumed);
  EXPECT_EQ(p.run_id, kNewRun);
  ASSERT_EQ(p.notes.size(), 2u);
  EXPECT_EQ(p.notes[0], "train: resuming from /ck/a.bin (epoch 1, batch 4, step 4), run unknown");
  EXPECT_EQ(p.notes[1].rfind("train: /ck/a.bin is a version 3 checkpoint: it records no run id", 0), 0u) << p.notes[1];
  EXPECT_NE(p.notes[1].find("this run continues as run " + kNewRun), std::string::npos) << p.notes[1];
}

}  // namespace
