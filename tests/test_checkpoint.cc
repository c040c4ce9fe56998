// test_checkpoint: checkpoint files round-trip (one shared momentum buffer, or every rank's own
// for --use-adasum, and the run's configuration block), version 3 and 2 files still load with
// their run unknown, every defect (also in the configuration block) is detected and named, the
// newest valid file wins over corrupt newer ones, pruning and temp-file removal touch only the
// run's own files, and unwritable directories give a clear error.
#include <gtest/gtest.h>

#include <zlib.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>

#include "src/checkpoint.h"
#include "tests/checkpoint_v2.h"
#include "tests/fixture.h"
#include "tests/test_util.h"

namespace {

TrainState sample_state(int64_t step) {
  TrainState s;
  s.world_size = 2;
  s.batch_size = 32;
  s.seed = 7;
  s.epoch = 3;
  s.batch = 17;
  s.step = step;
  s.momentum_started = true;
  s.run_id = "00112233445566aa";
  s.has_settings = true;
  s.settings.lr = 0.02;
  s.settings.momentum = 0.9;
  s.settings.fp16_allreduce = true;
  s.settings.allreduce = "ring";
  for (int i = 0; i < 100; ++i) {
    s.params.push_back(float(i) * 0.5f + float(step));
    s.momentum.push_back(-float(i));
  }
  torch_manual_seed(&s.generator, uint64_t(step));
  for (int i = 0; i < 700; ++i) torch_random(&s.generator);  // mid-block: index 76
  return s;
}

// Another run (its own run id and --seed) in the same directory, at step.
TrainState other_run_state(int64_t step) {
  TrainState s = sample_state(step);
  s.run_id = "bbbbbbbbbbbbbbbb";
  s.seed = 1;
  return s;
}

// sample_state with every one of `world` ranks' own momentum buffer (rank r's: -i - 1000 r).
TrainState per_rank_state(int64_t step, int world) {
  TrainState s = sample_state(step);
  s.world_size = world;
  s.momentum_buffers = world;
  s.momentum.clear();
  for (int r = 0; r < world; ++r)
    for (int i = 0; i < 100; ++i) s.momentum.push_back(-float(i) - 1000.0f * float(r));
  return s;
}

void fix_crc(std::string* b) {
  const uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(b->data()), uInt(b->size() - 4)));
  std::memcpy(&(*b)[b->size() - 4], &crc, 4);
}

std::string decode_error(const std::string& bytes, size_t n = 100) {
  try {
    decode_checkpoint(bytes, n);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, RoundTrip) {
  TrainState s = sample_state(5);
  TrainState t = decode_checkpoint(encode_checkpoint(s), 100);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.batch_size, 32);
  EXPECT_EQ(t.seed, 7);
  EXPECT_EQ(t.epoch, 3);
  EXPECT_EQ(t.batch, 17);
  EXPECT_EQ(t.step, 5);
  EXPECT_TRUE(t.momentum_started);
  EXPECT_EQ(t.params, s.params);
  EXPECT_EQ(t.momentum, s.momentum);
  EXPECT_EQ(t.generator.index, 76u);
  EXPECT_EQ(std::memcmp(t.generator.state, s.generator.state, sizeof s.generator.state), 0);
  EXPECT_EQ(torch_random(&t.generator), torch_random(&s.generator));
  EXPECT_EQ(t.momentum_buffers, 1);
  EXPECT_EQ(t.version, 4);
  EXPECT_EQ(t.run_id, "00112233445566aa");
  EXPECT_TRUE(t.has_settings);
  EXPECT_EQ(format_run_config(run_config_of(t)), format_run_config(run_config_of(s)));
  EXPECT_EQ(t.settings.lr, 0.02);
  EXPECT_EQ(t.settings.momentum, 0.9);
  EXPECT_TRUE(t.settings.fp16_allreduce);
  EXPECT_EQ(t.settings.allreduce, "ring");
  TrainState no_id = s;
  no_id.run_id = "";
  EXPECT_THROW(encode_checkpoint(no_id), std::invalid_argument);
}

// The configuration block sits after the version 4 header's block length (offset 64), as text.
size_t config_bytes_of(const std::string& file) {
  uint32_t n;
  std::memcpy(&n, &file[64], 4);
  return n;
}

// --use-adasum on 4 ranks: the file holds the four buffers in rank order and gives them back.
TEST(Checkpoint, RoundTripWithEveryRanksMomentum) {
  const TrainState s = per_rank_state(5, 4);
  const std::string bytes = encode_checkpoint(s);
  // version 4 header (68 bytes), configuration block, params, 4 buffers, 624 generator words +
  // index, CRC
  const size_t config = config_bytes_of(bytes);
  EXPECT_EQ(bytes.substr(68, config), format_run_config(run_config_of(s)));
  EXPECT_EQ(bytes.size(), 68u + config + 100 * 4 + 4 * 100 * 4 + 625 * 4 + 4);
  uint32_t version, buffers;
  std::memcpy(&version, &bytes[8], 4);
  std::memcpy(&buffers, &bytes[60], 4);
  EXPECT_EQ(version, 4u);
  EXPECT_EQ(buffers, 4u);
  const TrainState t = decode_checkpoint(bytes, 100);
  EXPECT_EQ(t.world_size, 4);
  EXPECT_EQ(t.momentum_buffers, 4);
  EXPECT_EQ(t.params, s.params);
  ASSERT_EQ(t.momentum.size(), 400u);
  EXPECT_EQ(t.momentum, s.momentum);
  EXPECT_EQ(t.momentum[3 * 100 + 7], -7.0f - 3000.0f) << "rank 3's buffer is the fourth";
  EXPECT_EQ(t.generator.index, s.generator.index);
  EXPECT_EQ(encode_checkpoint(t), bytes);
}

// A buffer count that is neither 1 nor the world size, or floats that are not that many buffers.
TEST(Checkpoint, MomentumBufferCountIsChecked) {
  const std::string good = encode_checkpoint(per_rank_state(5, 4));
  std::string three = good;
  const uint32_t n3 = 3;
  std::memcpy(&three[60], &n3, 4);
  fix_crc(&three);
  EXPECT_NE(decode_error(three).find("truncated or padded"), std::string::npos) << decode_error(three);
  // Three buffers' worth of floats with the count saying 3: sized right, but not this world.
  const size_t h = 68 + config_bytes_of(good);
  std::string sized = three.substr(0, h + 400 + 1200) + good.substr(h + 400 + 1600);
  fix_crc(&sized);
  EXPECT_EQ(decode_error(sized), "holds 3 momentum buffers for a 4-rank run (expected 1 or 4)");
  std::string zero = good;
  std::memset(&zero[60], 0, 4);
  fix_crc(&zero);
  EXPECT_NE(decode_error(zero).find("truncated or padded"), std::string::npos) << decode_error(zero);
  std::string huge = good;
  std::memset(&huge[60], 0xff, 4);
  fix_crc(&huge);
  EXPECT_NE(decode_error(huge).find("truncated or padded"), std::string::npos) << decode_error(huge);
  TrainState bad = per_rank_state(5, 4);
  bad.momentum.pop_back();
  EXPECT_THROW(encode_checkpoint(bad), std::invalid_argument);
}

// tests/fixtures/checkpoint_v2.bin: sample_state(5) as baresgd's version 2 encoder wrote it
// (commit 804b01d, before the buffer count). It loads as one buffer every rank shares.
TEST(Checkpoint, Version2FileLoadsWithOneBuffer) {
  const std::string v2 = testutil::read_file(fixture_path("checkpoint_v2.bin"));
  ASSERT_EQ(v2.size(), 60u + 2 * 100 * 4 + 625 * 4 + 4);
  const TrainState s = sample_state(5);
  EXPECT_EQ(testutil::encode_checkpoint_v2(s), v2) << "the tests' version 2 writer is not the old layout";
  const TrainState t = decode_checkpoint(v2, 100);
  EXPECT_EQ(t.momentum_buffers, 1);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.step, 5);
  EXPECT_EQ(t.batch, 17);
  EXPECT_EQ(t.params, s.params);
  EXPECT_EQ(t.momentum, s.momentum);
  EXPECT_EQ(t.generator.index, 76u);
  EXPECT_EQ(std::memcmp(t.generator.state, s.generator.state, sizeof s.generator.state), 0);
  EXPECT_EQ(t.version, 2);
  EXPECT_EQ(t.run_id, "") << "a version 2 file records no run";
  EXPECT_FALSE(t.has_settings);
  // Re-encoded (with a run id) it is a version 4 file with the same state.
  TrainState with_id = t;
  with_id.run_id = "0123456789abcdef";
  const TrainState u = decode_checkpoint(encode_checkpoint(with_id), 100);
  EXPECT_EQ(u.momentum, s.momentum);
  EXPECT_EQ(u.momentum_buffers, 1);
  // Damaged version 2 files are still named.
  EXPECT_NE(decode_error(v2.substr(0, v2.size() - 1)).find("truncated or padded"), std::string::npos);
  std::string flipped = v2;
  flipped[100] ^= 1;
  EXPECT_NE(decode_error(flipped).find("checksum mismatch"), std::string::npos);
}

TEST(Checkpoint, EveryDefectIsNamed) {
  std::string good = encode_checkpoint(sample_state(5));
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  EXPECT_NE(decode_error(flipped).find("checksum mismatch"), std::string::npos);
  EXPECT_NE(decode_error(good.substr(0, good.size() - 9)).find("truncated"), std::string::npos);
  EXPECT_NE(decode_error(good.substr(0, 20)).find("truncated"), std::string::npos);
  EXPECT_NE(decode_error("").find("truncated"), std::string::npos);
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_NE(decode_error(magic).find("bad magic"), std::string::npos);
  std::string version = good;
  version[8] = 9;
  EXPECT_NE(decode_error(version).find("unsupported version 9"), std::string::npos);
  EXPECT_NE(decode_error(good, 99).find("holds 100 parameters"), std::string::npos);
  // A version 1 file (before the generator state was saved) is refused by name.
  std::string v1 = good;
  v1[8] = 1;
  EXPECT_NE(decode_error(v1).find("version 1 checkpoint"), std::string::npos) << decode_error(v1);
  // A generator index past the block (CRC made valid again) is impossible.
  std::string index = good;
  const uint32_t bad_index = 625;
  std::memcpy(&index[index.size() - 8], &bad_index, 4);
  fix_crc(&index);
  EXPECT_NE(decode_error(index).find("impossible generator index 625"), std::string::npos) << decode_error(index);
  EXPECT_EQ(decode_error(good), "");
}

TEST(Checkpoint, NewestValidWinsAndCorruptOnesAreNamed) {
  std::string dir = testutil::make_temp_dir("ckpt");
  save_checkpoint(dir, sample_state(10));
  const std::string p20 = save_checkpoint(dir, sample_state(20));
  EXPECT_EQ(p20, dir + "/ckpt-00112233445566aa-000000000020.bin");
  std::string p30 = save_checkpoint(dir, sample_state(30));
  // Corrupt the newest (a torn write) -> the previous good one is used, the bad one named.
  std::string bytes = testutil::read_file(p30);
  testutil::write_file(p30, bytes.substr(0, bytes.size() / 3));
  TrainState s;
  std::string path;
  std::vector<std::string> warnings;
  ASSERT_TRUE(load_newest_checkpoint(dir, 100, &s, &path, &warnings));
  EXPECT_EQ(path, p20);
  EXPECT_EQ(s.step, 20);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(p30), std::string::npos);
  // Keep only the newest 3.
  save_checkpoint(dir, sample_state(40));
  save_checkpoint(dir, sample_state(50));
  auto r = testutil::run("ls " + dir + " | wc -l");
  EXPECT_EQ(std::stoi(r.out), 3);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(Checkpoint, EmptyDirHasNone) {
  std::string dir = testutil::make_temp_dir("ckpt");
  TrainState s;
  std::string path;
  std::vector<std::string> warnings;
  EXPECT_FALSE(load_newest_checkpoint(dir, 100, &s, &path, &warnings));
  EXPECT_FALSE(load_newest_checkpoint(dir + "/missing", 100, &s, &path, &warnings));
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(Checkpoint, UnwritableDirectoryIsAClearError) {
  std::string dir = testutil::make_temp_dir("ckpt");
  testutil::write_file(dir + "/file", "x");
  try {
    prepare_checkpoint_dir(dir + "/file/sub");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/file/sub"), std::string::npos) << e.what();
  }
  prepare_checkpoint_dir(dir + "/a/b");  // creates parents
  EXPECT_NO_THROW(save_checkpoint(dir + "/a/b", sample_state(1)));
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(Checkpoint, StaleTempFilesOfAKilledWriterAreRemoved) {
  std::string dir = testutil::make_temp_dir("ckpt");
  save_checkpoint(dir, sample_state(5));
  testutil::write_file(dir + "/.ckpt-000000000010.bin.tmp", "half");
  testutil::write_file(dir + "/.other.tmp", "not ours");
  auto removed = remove_stale_temp_files(dir);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], dir + "/.ckpt-000000000010.bin.tmp");
  EXPECT_FALSE((::access((dir + "/.ckpt-000000000010.bin.tmp").c_str(), F_OK) == 0));
  EXPECT_TRUE((::access((dir + "/.other.tmp").c_str(), F_OK) == 0));
  EXPECT_TRUE((::access((dir + "/ckpt-00112233445566aa-000000000005.bin").c_str(), F_OK) == 0));
  // This version's temp names (with the run id) too.
  testutil::write_file(dir + "/.ckpt-00112233445566aa-000000000010.bin.tmp", "half");
  EXPECT_EQ(remove_stale_temp_files(dir),
            std::vector<std::string>{dir + "/.ckpt-00112233445566aa-000000000010.bin.tmp"});
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Another run writing into the same directory holds an flock on its temp file until it is
// renamed: a starting run must not remove it.
TEST(Checkpoint, ALiveWritersTempFileIsLeftAlone) {
  std::string dir = testutil::make_temp_dir("ckpt");
  const std::string live = dir + "/.ckpt-aaaaaaaaaaaaaaaa-000000000010.bin.tmp";
  testutil::write_file(live, "being written");
  const int fd = ::open(live.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_TRUE(remove_stale_temp_files(dir).empty());
  EXPECT_EQ(::access(live.c_str(), F_OK), 0) << "a live writer's temp file was removed";
  ::close(fd);  // the writer died: now it is stale
  EXPECT_EQ(remove_stale_temp_files(dir), std::vector<std::string>{live});
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Issue 11: pruning (keep the newest 3) removes only the run's own files, never another run's in
// the same directory nor an older baresgd's ckpt-<step>.bin.
TEST(Checkpoint, PruningKeepsOnlyTheRunsOwnNewestThree) {
  std::string dir = testutil::make_temp_dir("ckpt");
  TrainState a = sample_state(0), b = other_run_state(0);
  testutil::write_file(dir + "/ckpt-000000000099.bin", testutil::encode_checkpoint_v2(sample_state(99)));
  for (int64_t step : {20, 40, 60}) {
    a.step = step;
    save_checkpoint(dir, a);
  }
  for (int64_t step : {10, 20, 30, 40, 50}) {
    b.step = step;
    save_checkpoint(dir, b);
  }
  auto r = testutil::run("ls " + dir);
  EXPECT_EQ(r.out,
            "ckpt-000000000099.bin\n"
            "ckpt-00112233445566aa-000000000020.bin\nckpt-00112233445566aa-000000000040.bin\n"
            "ckpt-00112233445566aa-000000000060.bin\n"
            "ckpt-bbbbbbbbbbbbbbbb-000000000030.bin\nckpt-bbbbbbbbbbbbbbbb-000000000040.bin\n"
            "ckpt-bbbbbbbbbbbbbbbb-000000000050.bin\n");
  std::system(("rm -rf '" + dir + "'").c_str());
}

// tests/fixtures/checkpoint_v3.bin: sample_state(5) (without the run and settings it cannot
// hold) as baresgd's version 3 encoder wrote it (commit f70419b). It loads, its run unknown.
TEST(Checkpoint, Version3FileLoadsWithItsRunUnknown) {
  const std::string v3 = testutil::read_file(fixture_path("checkpoint_v3.bin"));
  ASSERT_EQ(v3.size(), 64u + 2 * 100 * 4 + 625 * 4 + 4);
  const TrainState s = sample_state(5);
  EXPECT_EQ(testutil::encode_checkpoint_v3(s), v3) << "the tests' version 3 writer is not the old layout";
  const TrainState t = decode_checkpoint(v3, 100);
  EXPECT_EQ(t.version, 3);
  EXPECT_EQ(t.run_id, "");
  EXPECT_FALSE(t.has_settings);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.batch_size, 32);
  EXPECT_EQ(t.seed, 7);
  EXPECT_EQ(t.step, 5);
  EXPECT_EQ(t.params, s.params);
  EXPECT_EQ(t.momentum, s.momentum);
  EXPECT_EQ(t.generator.index, 76u);
  std::string flipped = v3;
  flipped[100] ^= 1;
  EXPECT_NE(decode_error(flipped).find("checksum mismatch"), std::string::npos);
}

// A configuration block that passes the CRC but does not parse, or disagrees with the header,
// is refused naming the block; in a directory the file is named and skipped.
TEST(Checkpoint, CorruptConfigBlockIsNamed) {
  const std::string good = encode_checkpoint(sample_state(5));
  const size_t n = config_bytes_of(good);
  const std::string block = good.substr(68, n);
  auto with_block = [&](std::string text) {
    std::string b = good.substr(0, 64);
    const uint32_t len = uint32_t(text.size());
    b.append(reinterpret_cast<const char*>(&len), 4);
    b += text + good.substr(68 + n);
    fix_crc(&b);
    return b;
  };
  EXPECT_EQ(decode_error(with_block(block)), "");
  std::string lr = block;
  lr.replace(lr.find("lr 0.02"), 7, "lr 0.0x");
  EXPECT_EQ(decode_error(with_block(lr)), "config block: lr '0.0x' is not a finite number >= 0");
  std::string seed = block;
  seed.replace(seed.find("seed 7\n"), 7, "seed 8\n");
  EXPECT_EQ(decode_error(with_block(seed)),
            "config block (world size 2, batch size 32, seed 8) disagrees with the header (2, 32, 7)");
  EXPECT_NE(decode_error(with_block(block.substr(0, block.size() - 1))).find("config block: "), std::string::npos);
  std::string huge = good;
  const uint32_t big = 1u << 30;
  std::memcpy(&huge[64], &big, 4);
  fix_crc(&huge);
  EXPECT_NE(decode_error(huge).find("config block of 1073741824 bytes"), std::string::npos) << decode_error(huge);
  std::string flipped = good;
  flipped[68 + 2] ^= 1;  // inside the block, CRC not fixed
  EXPECT_NE(decode_error(flipped).find("checksum mismatch"), std::string::npos);

  std::string dir = testutil::make_temp_dir("ckpt");
  save_checkpoint(dir, sample_state(4));
  const std::string bad = dir + "/ckpt-00112233445566aa-000000000006.bin";
  testutil::write_file(bad, with_block(lr));
  TrainState s;
  std::string path;
  std::vector<std::string> warnings;
  ASSERT_TRUE(load_newest_checkpoint(dir, 100, &s, &path, &warnings));
  EXPECT_EQ(s.step, 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], bad + ": config block: lr '0.0x' is not a finite number >= 0; skipping it");
  std::system(("rm -rf '" + dir + "'").c_str());
}

// --resume's choice: the newest valid file of this configuration, even when a newer one of
// another configuration exists (which is reported); without a match, the newest of any.
TEST(Checkpoint, ResumeCandidatesPreferThisConfiguration) {
  std::string dir = testutil::make_temp_dir("ckpt");
  TrainState a = sample_state(60), b = other_run_state(30);
  save_checkpoint(dir, a);
  save_checkpoint(dir, b);
  std::vector<std::string> warnings;
  RunConfig now = run_config_of(b);
  now.run_id = "";
  now.settings.epochs = 99;  // harmless: still a match
  ResumeCandidates c = find_resume_candidates(dir, 100, now, &warnings);
  ASSERT_TRUE(c.have_match);
  EXPECT_EQ(c.match.step, 30);
  EXPECT_EQ(c.match.run_id, "bbbbbbbbbbbbbbbb");
  ASSERT_TRUE(c.have_other);
  EXPECT_EQ(c.other_path, dir + "/ckpt-00112233445566aa-000000000060.bin");
  now.settings.lr = 0.5;
  c = find_resume_candidates(dir, 100, now, &warnings);
  EXPECT_FALSE(c.have_match);
  ASSERT_TRUE(c.have_other);
  EXPECT_EQ(c.other.step, 60) << "without a match the newest of any configuration";
  EXPECT_TRUE(warnings.empty());
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
