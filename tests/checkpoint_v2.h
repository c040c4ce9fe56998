// checkpoint_v2: the version 2 checkpoint layout (one momentum buffer, no buffer count), written
// here so tests can make the old files a resumed run must still load. test_checkpoint checks it
// against tests/fixtures/checkpoint_v2.bin, which baresgd's own version 2 encoder wrote.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <string>

#include "src/checkpoint.h"

namespace testutil {

// s.momentum's first params.size() floats (rank 0's buffer) are the file's one buffer.
inline std::string encode_checkpoint_v2(const TrainState& s) {
  std::string out("BSGDCKPT", 8);
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  const uint32_t version = 2;
  const int32_t world = s.world_size, batch_size = s.batch_size, epoch = s.epoch, started = s.momentum_started;
  const int64_t seed = s.seed, batch = s.batch, step = s.step;
  const uint64_t n = s.params.size();
  put(&version, 4);
  put(&world, 4);
  put(&batch_size, 4);
  put(&seed, 8);
  put(&epoch, 4);
  put(&batch, 8);
  put(&step, 8);
  put(&started, 4);
  put(&n, 8);
  put(s.params.data(), n * 4);
  put(s.momentum.data(), n * 4);
  put(s.generator.state, sizeof s.generator.state);
  put(&s.generator.index, 4);
  const uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), uInt(out.size())));
  put(&crc, 4);
  return out;
}

}  // namespace testutil
