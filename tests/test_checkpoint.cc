// test_checkpoint: checkpoint files round-trip (one shared momentum buffer, or every rank's own
// for --use-adasum), version 2 files (one buffer) still load, every defect is detected and named,
// the newest valid file wins over corrupt newer ones, and unwritable directories give a clear error.
#include <gtest/gtest.h>

#include <zlib.h>

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
  for (int i = 0; i < 100; ++i) {
    s.params.push_back(float(i) * 0.5f + float(step));
    s.momentum.push_back(-float(i));
  }
  torch_manual_seed(&s.generator, uint64_t(step));
  for (int i = 0; i < 700; ++i) torch_random(&s.generator);  // mid-block: index 76
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
}

// --use-adasum on 4 ranks: the file holds the four buffers in rank order and gives them back.
TEST(Checkpoint, RoundTripWithEveryRanksMomentum) {
  const TrainState s = per_rank_state(5, 4);
  const std::string bytes = encode_checkpoint(s);
  // version 3 header (64 bytes), params, 4 buffers, 624 generator words + index, CRC
  EXPECT_EQ(bytes.size(), 64u + 100 * 4 + 4 * 100 * 4 + 625 * 4 + 4);
  uint32_t version, buffers;
  std::memcpy(&version, &bytes[8], 4);
  std::memcpy(&buffers, &bytes[60], 4);
  EXPECT_EQ(version, 3u);
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
  std::string sized = three.substr(0, 64 + 400 + 1200) + good.substr(64 + 400 + 1600);
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
  // Re-encoded it is a version 3 file with the same state.
  const TrainState u = decode_checkpoint(encode_checkpoint(t), 100);
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
  std::string p20 = save_checkpoint(dir, sample_state(20));
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
  EXPECT_TRUE((::access((dir + "/ckpt-000000000005.bin").c_str(), F_OK) == 0));
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
