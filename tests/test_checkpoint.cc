// test_checkpoint: checkpoint files round-trip, every defect is detected and named, the newest
// valid file wins over corrupt newer ones, and unwritable directories give a clear error.
#include <gtest/gtest.h>

#include <zlib.h>

#include <cstring>

#include "src/checkpoint.h"
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
  const uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(index.data()), uInt(index.size() - 4)));
  std::memcpy(&index[index.size() - 4], &crc, 4);
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

}  // namespace
