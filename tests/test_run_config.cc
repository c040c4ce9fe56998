// test_run_config: the configuration block of a version 4 checkpoint (src/run_config.h): the text
// round-trips exactly (floats too), the parser refuses every defect with one line naming it, and
// the differences --resume names read as flags.
#include <gtest/gtest.h>

#include <stdexcept>

#include "src/run_config.h"

namespace {

RunConfig sample_config() {
  RunConfig c;
  c.run_id = "0123456789abcdef";
  c.world_size = 4;
  c.batch_size = 64;
  c.seed = 42;
  c.settings.lr = 0.01;
  c.settings.momentum = 0.5;
  return c;
}

std::string parse_error(const std::string& text) {
  try {
    parse_run_config(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(RunConfig, TextIsOneSettingPerLineAndRoundTrips) {
  RunConfig c = sample_config();
  EXPECT_EQ(format_run_config(c),
            "run 0123456789abcdef\nworld-size 4\nbatch-size 64\nseed 42\nlr 0.01\nmomentum 0.5\nepochs 10\n"
            "dropout on\nfp16-allreduce off\ngradient-predivide-factor 1\nuse-adasum off\nallreduce auto\n"
            "threads 1\nepoch-first-sample 0\n");
  c.settings.lr = 0.1 + 0.2;  // 0.30000000000000004: needs 17 digits
  c.settings.momentum = 1.0 / 3;
  c.settings.dropout = false;
  c.settings.adasum = true;
  c.settings.allreduce = "halving-doubling";
  c.seed = -5;
  c.epoch_first_sample = 2560;
  const RunConfig d = parse_run_config(format_run_config(c));
  EXPECT_EQ(d.settings.lr, c.settings.lr);
  EXPECT_EQ(d.settings.momentum, c.settings.momentum);
  EXPECT_FALSE(d.settings.dropout);
  EXPECT_TRUE(d.settings.adasum);
  EXPECT_EQ(d.settings.allreduce, "halving-doubling");
  EXPECT_EQ(d.seed, -5);
  EXPECT_EQ(d.epoch_first_sample, 2560);
  EXPECT_EQ(format_run_config(d), format_run_config(c));
  // Any order is accepted.
  EXPECT_EQ(format_run_config(parse_run_config("epoch-first-sample 0\nthreads 1\nallreduce auto\nuse-adasum off\n"
                                               "gradient-predivide-factor 1\nfp16-allreduce off\ndropout on\n"
                                               "epochs 10\nmomentum 0.5\nlr 0.01\nseed 42\nbatch-size 64\n"
                                               "world-size 4\nrun 0123456789abcdef\n")),
            format_run_config(sample_config()));
}

TEST(RunConfig, EveryDefectIsOneLineNamingIt) {
  const std::string good = format_run_config(sample_config());
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_EQ(parse_error(good), "");
  EXPECT_EQ(parse_error(""), "config block: does not end with a newline");
  EXPECT_EQ(parse_error(good + "colour blue\n"), "config block: line 15: unknown key 'colour'");
  EXPECT_EQ(parse_error(good + "lr 0.1\n"), "config block: line 15: lr given twice");
  struct Edit {
    const char *from, *to, *error;
  };
  const Edit edits[] = {
      {"threads 1\n", "", "config block: no threads line"},
      {"epoch-first-sample 0", "epoch-first-sample -1",
       "config block: epoch-first-sample '-1' is not an integer in [0, 1099511627776]"},
      {"seed 42", "seed42", "config block: line 4 'seed42' is not 'key value'"},
      {"run 0123456789abcdef", "run 0123456789ABCDEF",
       "config block: run '0123456789ABCDEF' is not 16 lowercase hex digits"},
      {"world-size 4", "world-size 0", "config block: world-size '0' is not an integer in [1, 16777216]"},
      {"batch-size 64", "batch-size 6 4", "config block: batch-size '6 4' is not an integer in [1, 1048576]"},
      {"lr 0.01", "lr nan", "config block: lr 'nan' is not a finite number >= 0"},
      {"momentum 0.5", "momentum -1", "config block: momentum '-1' is not a finite number >= 0"},
      {"gradient-predivide-factor 1", "gradient-predivide-factor 0",
       "config block: gradient-predivide-factor '0' is not a finite number > 0"},
      {"dropout on", "dropout yes", "config block: dropout 'yes' is neither on nor off"},
      {"allreduce auto", "allreduce fast\x01", "config block: allreduce 'fast\\x01' is not an --allreduce name"},
      {"epochs 10", "epochs 1e3", "config block: epochs '1e3' is not an integer in [0, 1048576]"},
  };
  for (const Edit& e : edits) EXPECT_EQ(parse_error(edited(e.from, e.to)), e.error) << e.from << " -> " << e.to;
  EXPECT_NE(parse_error(std::string(5000, 'x') + "\n").find("at most 4096"), std::string::npos);
}

TEST(RunConfig, ChangesReadAsFlags) {
  const RunConfig was = sample_config();
  RunConfig now = was;
  now.run_id = "";
  EXPECT_TRUE(run_config_changes(was, true, now).empty()) << "the run id is not a setting";
  now.seed = 1;
  now.settings.lr = 0.02;
  now.settings.epochs = 20;
  now.settings.fp16_allreduce = true;
  now.settings.dropout = false;
  now.world_size = 1;
  const auto changes = run_config_changes(was, true, now);
  const std::vector<SettingChange::Kind> refused = {SettingChange::kNumbers};
  EXPECT_EQ(changes_text(changes, true, refused), "--seed 42 --lr 0.01 dropout on no --fp16-allreduce");
  EXPECT_EQ(changes_text(changes, false, refused), "--seed 1 --lr 0.02 --no-dropout --fp16-allreduce");
  EXPECT_EQ(changes_text(changes, true, {SettingChange::kHarmless}), "--epochs 10");
  EXPECT_EQ(changes_text(changes, false, {SettingChange::kWorldSize}), "1 rank");
  // A version 3 file: only world size, --batch-size and --seed are known.
  EXPECT_EQ(changes_text(run_config_changes(was, false, now), false, refused), "--seed 1");
  EXPECT_EQ(changes_text(run_config_changes(was, false, now), false, {SettingChange::kWorldSize}), "1 rank");
  now.epoch_first_sample = 128;
  EXPECT_EQ(run_config_changes(was, true, now).size(), changes.size()) << "a position is not a setting";
}

}  // namespace
