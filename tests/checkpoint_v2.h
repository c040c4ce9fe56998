// checkpoint_v2: the version 2 checkpoint layout (one momentum buffer, no buffer count) and the
// version 3 layout (+ the buffer count; no run, no configuration block), written here so tests
// can make the old files a resumed run must still load. test_checkpoint checks them against
// tests/fixtures/checkpoint_v2.bin and checkpoint_v3.bin, which baresgd's own encoders wrote.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <string>

#include "src/checkpoint.h"

namespace testutil {

// Version 2: s.momentum's first params.size() floats (rank 0's buffer) are the file's one buffer;
// version 3: all s.momentum_buffers of them, with their count.
inline std::string encode_checkpoint_old(const TrainState& s, uint32_t version) {
  std::string out("BSGDCKPT", 8);
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
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
  const uint32_t buffers = version == 2 ? 1 : uint32_t(s.momentum_buffers);
  if (version == 3) put(&buffers, 4);
  put(s.params.data(), n * 4);
  put(s.momentum.data(), n * 4 * buffers);
  put(s.generator.state, sizeof s.generator.state);
  put(&s.generator.index, 4);
  const uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), uInt(out.size())));
  put(&crc, 4);
  return out;
}

inline std::string encode_checkpoint_v2(const TrainState& s) { return encode_checkpoint_old(s, 2); }
inline std::string encode_checkpoint_v3(const TrainState& s) { return encode_checkpoint_old(s, 3); }

}  // namespace testutil
