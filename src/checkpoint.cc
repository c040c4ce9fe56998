// checkpoint: encode/decode/verify checkpoint files and save/load them atomically.
#include "src/checkpoint.h"
#include "src/checkpoint_names.h"
#include "src/crc32.h"
#include "src/safe_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace {

constexpr char kMagic[8] = {'B', 'S', 'G', 'D', 'C', 'K', 'P', 'T'};
// 2: + torch generator state; 3: + momentum buffer count; 4: + configuration block
constexpr uint32_t kVersion = 4;
// magic, version, world, batch, seed, epoch, batch index, step, started, nparams
constexpr size_t kHeaderBytesV2 = 8 + 4 + 4 + 4 + 8 + 4 + 8 + 8 + 4 + 8;
constexpr size_t kHeaderBytesV3 = kHeaderBytesV2 + 4;                 // + momentum buffers
constexpr size_t kHeaderBytesV4 = kHeaderBytesV3 + 4;                 // + configuration block bytes (the block follows)
constexpr size_t kGeneratorBytes = (TorchGenerator::kWords + 1) * 4;  // words, index

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
T get(const std::string& in, size_t* at) {
  T v;
  std::memcpy(&v, in.data() + *at, sizeof v);
  *at += sizeof v;
  return v;
}

std::string err(const std::string& path, const std::string& what) {
  return path + ": " + what + ": " + std::strerror(errno);
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(err(path, "write failed"));
    done += size_t(n);
  }
}

struct Listed {
  long long step;
  std::string run_id;  // empty: an older baresgd's ckpt-<step>.bin
  std::string path;
};

// Checkpoint files in dir, newest (highest step) first.
std::vector<Listed> list_checkpoints(const std::string& dir) {
  std::vector<Listed> found;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return found;
  while (dirent* e = ::readdir(d)) {
    Listed l;
    if (parse_checkpoint_name(e->d_name, &l.run_id, &l.step)) {
      l.path = dir + "/" + e->d_name;
      found.push_back(std::move(l));
    }
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const Listed& a, const Listed& b) { return a.step != b.step ? a.step > b.step : a.path > b.path; });
  return found;
}

// The file's bytes, or false with a warning naming it.
// A regular file only (a FIFO or a device is named, never read), and no larger than its header's
// world size allows (at most one momentum buffer per rank): a huge or sparse file is refused
// before its bytes are read.
bool read_checkpoint_file(const std::string& p, size_t expect_params, std::string* bytes,
                          std::vector<std::string>* warnings) {
  try {
    size_t size = 0;
    const int fd = open_regular_for_read(p, SIZE_MAX, "checkpoint", &size);
    int32_t world = 1;
    if (size >= 16 && ::pread(fd, &world, sizeof world, 12) != ssize_t(sizeof world)) world = 1;
    const size_t buffers = 1 + size_t(std::max(world, 1));
    const size_t max_bytes =
        kHeaderBytesV4 + kMaxRunConfigBytes + buffers * expect_params * sizeof(float) + kGeneratorBytes + 4;
    if (size > max_bytes) {
      ::close(fd);
      warnings->push_back(p + ": checkpoint is " + std::to_string(size) + " bytes, more than the " +
                          std::to_string(max_bytes) + " its header's world size allows; skipping it");
      return false;
    }
    *bytes = read_open_file(fd, size, p, "checkpoint");
    return true;
  } catch (const SafeFileError& e) {
    warnings->push_back(std::string(e.what()) + "; skipping it");
    return false;
  }
}

bool decode_file(const std::string& p, size_t expect_params, TrainState* out, std::vector<std::string>* warnings) {
  std::string bytes;
  if (!read_checkpoint_file(p, expect_params, &bytes, warnings)) return false;
  try {
    *out = decode_checkpoint(bytes, expect_params);
    return true;
  } catch (const std::exception& e) {
    warnings->push_back(p + ": " + e.what() + "; skipping it");
    return false;
  }
}

}  // namespace

RunConfig run_config_of(const TrainState& s) {
  RunConfig c;
  c.run_id = s.run_id;
  c.world_size = s.world_size;
  c.batch_size = s.batch_size;
  c.seed = s.seed;
  c.settings = s.settings;
  c.epoch_first_sample = s.epoch_first_sample;
  return c;
}

std::string encode_checkpoint(const TrainState& s) {
  if (!is_run_id(s.run_id))
    throw std::invalid_argument("encode_checkpoint: run id '" + s.run_id + "' is not 16 lowercase hex digits");
  if (s.momentum_buffers < 1 || s.momentum.size() != size_t(s.momentum_buffers) * s.params.size())
    throw std::invalid_argument("encode_checkpoint: " + std::to_string(s.momentum.size()) +
                                " momentum floats are not " + std::to_string(s.momentum_buffers) + " buffers of " +
                                std::to_string(s.params.size()));
  std::string out;
  out.append(kMagic, 8);
  put<uint32_t>(out, kVersion);
  put<int32_t>(out, s.world_size);
  put<int32_t>(out, s.batch_size);
  put<int64_t>(out, s.seed);
  put<int32_t>(out, s.epoch);
  put<int64_t>(out, s.batch);
  put<int64_t>(out, s.step);
  put<int32_t>(out, s.momentum_started ? 1 : 0);
  put<uint64_t>(out, s.params.size());
  put<uint32_t>(out, uint32_t(s.momentum_buffers));
  const std::string config = format_run_config(run_config_of(s));
  put<uint32_t>(out, uint32_t(config.size()));
  out += config;
  out.append(reinterpret_cast<const char*>(s.params.data()), s.params.size() * sizeof(float));
  out.append(reinterpret_cast<const char*>(s.momentum.data()), s.momentum.size() * sizeof(float));
  out.append(reinterpret_cast<const char*>(s.generator.state), sizeof s.generator.state);
  put<uint32_t>(out, s.generator.index);
  put<uint32_t>(out, crc32_of(out.data(), out.size()));
  return out;
}

namespace {

std::runtime_error truncated(const std::string& in) {
  return std::runtime_error("truncated (" + std::to_string(in.size()) + " bytes)");
}

// The format version after the magic (at: past it). Throws for a file too short for any header,
// another magic, version 1 (no generator state) and versions this build does not know.
uint32_t read_version(const std::string& in, size_t* at) {
  if (in.size() < kHeaderBytesV2 + 4) throw truncated(in);
  if (std::memcmp(in.data(), kMagic, 8) != 0) throw std::runtime_error("bad magic (not a baresgd checkpoint)");
  *at = 8;
  const uint32_t version = get<uint32_t>(in, at);
  if (version == 1)
    throw std::runtime_error(
        "version 1 checkpoint (written before baresgd drew torch's random streams; "
        "it holds no generator state and cannot be resumed bit for bit)");
  if (version < 2 || version > kVersion)
    throw std::runtime_error("unsupported version " + std::to_string(version) + " (expected 2 to " +
                             std::to_string(kVersion) + ")");
  return version;
}

// The counts in a header that size the rest of the file.
struct HeaderCounts {
  uint64_t params = 0;        // floats per buffer
  uint32_t buffers = 1;       // momentum buffers (version 3 on; 1 before)
  uint32_t config_bytes = 0;  // the config block (version 4 on; none before)
};

// The fixed header after the version: the position into s, the counts returned.
HeaderCounts read_fixed_header(const std::string& in, uint32_t version, size_t* at, TrainState* s) {
  s->world_size = get<int32_t>(in, at);
  s->batch_size = get<int32_t>(in, at);
  s->seed = get<int64_t>(in, at);
  s->epoch = get<int32_t>(in, at);
  s->batch = get<int64_t>(in, at);
  s->step = get<int64_t>(in, at);
  s->momentum_started = get<int32_t>(in, at) != 0;
  HeaderCounts c;
  c.params = get<uint64_t>(in, at);
  c.buffers = version == 2 ? 1 : get<uint32_t>(in, at);
  c.config_bytes = version >= 4 ? get<uint32_t>(in, at) : 0;
  return c;
}

// The file's length for a header of `header` bytes and these counts: params and `buffers`
// momentum buffers, n floats each, the generator and the checksum. Throws when the file has
// another length (a count too large for the file cannot fit it; checked by division so no product
// overflows).
size_t checked_length(const std::string& in, size_t header, const HeaderCounts& c) {
  const uint64_t n = c.params;
  const size_t float_room = (in.size() - header - kGeneratorBytes - 4) / sizeof(float);
  const bool fits = in.size() >= header + kGeneratorBytes + 4 && c.buffers >= 1 &&
                    (n == 0 || uint64_t(c.buffers) + 1 <= float_room / n);
  const size_t want = fits ? header + (1 + size_t(c.buffers)) * n * sizeof(float) + kGeneratorBytes + 4 : 0;
  if (in.size() != want)
    throw std::runtime_error("truncated or padded (" + std::to_string(in.size()) + " bytes, expected " +
                             (fits ? std::to_string(want)
                                   : std::to_string(header + kGeneratorBytes + 4) + " + 4 x " + std::to_string(n) +
                                         " x (1 + " + std::to_string(c.buffers) + ")") +
                             ")");
  return want;
}

// Throws for a position no run reaches, or momentum buffers that are neither one nor one per rank.
void check_position(const TrainState& s, uint32_t buffers) {
  if (s.world_size < 1 || s.batch_size < 1 || s.epoch < 1 || s.batch < 0 || s.step < 0)
    throw std::runtime_error("impossible training position in header");
  if (buffers != 1 && int64_t(buffers) != s.world_size)
    throw std::runtime_error("holds " + std::to_string(buffers) + " momentum buffers for a " +
                             std::to_string(s.world_size) + "-rank run (expected 1 or " + std::to_string(s.world_size) +
                             ")");
}

// A version 4 config block into s; throws when it disagrees with the header.
void apply_config_block(const RunConfig& c, TrainState* s) {
  if (c.world_size != s->world_size || c.batch_size != s->batch_size || c.seed != s->seed)
    throw std::runtime_error("config block (world size " + std::to_string(c.world_size) + ", batch size " +
                             std::to_string(c.batch_size) + ", seed " + std::to_string(c.seed) +
                             ") disagrees with the header (" + std::to_string(s->world_size) + ", " +
                             std::to_string(s->batch_size) + ", " + std::to_string(s->seed) + ")");
  s->run_id = c.run_id;
  s->has_settings = true;
  s->settings = c.settings;
  s->epoch_first_sample = c.epoch_first_sample;
}

// The parameters, momentum buffers and generator from at (the file's length was checked).
void read_state_arrays(const std::string& in, size_t at, const HeaderCounts& c, TrainState* s) {
  s->momentum_buffers = int(c.buffers);
  s->params.resize(c.params);
  s->momentum.resize(size_t(c.buffers) * c.params);
  std::memcpy(s->params.data(), in.data() + at, c.params * sizeof(float));
  at += c.params * sizeof(float);
  std::memcpy(s->momentum.data(), in.data() + at, s->momentum.size() * sizeof(float));
  at += s->momentum.size() * sizeof(float);
  std::memcpy(s->generator.state, in.data() + at, sizeof s->generator.state);
  at += sizeof s->generator.state;
  s->generator.index = get<uint32_t>(in, &at);
  if (s->generator.index > uint32_t(TorchGenerator::kWords))
    throw std::runtime_error("impossible generator index " + std::to_string(s->generator.index));
}

}  // namespace

TrainState decode_checkpoint(const std::string& in, size_t expect_params) {
  size_t at = 0;
  const uint32_t version = read_version(in, &at);
  const size_t fixed = version == 2 ? kHeaderBytesV2 : version == 3 ? kHeaderBytesV3 : kHeaderBytesV4;
  if (in.size() < fixed + 4) throw truncated(in);
  TrainState s;
  const HeaderCounts counts = read_fixed_header(in, version, &at, &s);
  if (counts.config_bytes > kMaxRunConfigBytes)
    throw std::runtime_error("config block of " + std::to_string(counts.config_bytes) + " bytes (at most " +
                             std::to_string(kMaxRunConfigBytes) + ")");
  const size_t header = fixed + counts.config_bytes;  // the block is part of the header here
  if (in.size() < header + 4) throw truncated(in);
  const std::string config_text = in.substr(at, counts.config_bytes);
  at += counts.config_bytes;
  if (counts.params != expect_params)
    throw std::runtime_error("holds " + std::to_string(counts.params) + " parameters, the model has " +
                             std::to_string(expect_params));
  const size_t want = checked_length(in, header, counts);
  uint32_t stored;
  std::memcpy(&stored, in.data() + want - 4, 4);
  if (crc32_of(in.data(), want - 4) != stored) throw std::runtime_error("checksum mismatch (corrupt file)");
  check_position(s, counts.buffers);
  s.version = int(version);
  if (version >= 4) apply_config_block(parse_run_config(config_text), &s);
  read_state_arrays(in, at, counts, &s);
  return s;
}

void prepare_checkpoint_dir(const std::string& dir) {
  if (dir.empty()) throw std::runtime_error("--checkpoint-dir is empty");
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        throw std::runtime_error(err(partial, "cannot create checkpoint directory"));
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    throw std::runtime_error(err(dir, "checkpoint directory"));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw std::runtime_error(err(dir, "checkpoint directory is not writable"));
  check_write_dir(dir, "--checkpoint-dir");
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir) {
  std::vector<std::string> stale;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return stale;
  while (dirent* e = ::readdir(d))
    if (is_checkpoint_temp_name(e->d_name)) stale.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  std::vector<std::string> removed;
  for (const auto& p : stale) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // renamed by its writer meanwhile
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(p.c_str()) == 0) removed.push_back(p);
    ::close(fd);  // a writer holding the lock is alive: its file is not stale
  }
  return removed;
}

std::string save_checkpoint(const std::string& dir, const TrainState& s, int keep) {
  const std::string name = checkpoint_file_name(s.run_id, (long long)s.step);
  const std::string path = dir + "/" + name;
  const std::string tmp = dir + "/." + name + ".tmp";
  const std::string bytes = encode_checkpoint(s);
  // A temp file left by a writer that died at this step is removed first (never one a live writer
  // holds); the new one is created O_EXCL | O_NOFOLLOW in the checked directory (src/safe_file.h).
  struct stat left;
  if (::lstat(tmp.c_str(), &left) == 0) remove_stale_temp_files(dir);
  int fd = create_temp_file(tmp, "checkpoint temp file");
  // Locked until renamed, so another run's remove_stale_temp_files leaves it alone.
  try {
    if (::flock(fd, LOCK_EX) != 0) throw std::runtime_error(err(tmp, "cannot lock checkpoint"));
    write_all(fd, bytes, tmp);
    if (::fsync(fd) != 0) throw std::runtime_error(err(tmp, "fsync failed"));
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(err(path, "rename failed"));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) throw std::runtime_error(err(path, "close failed"));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  size_t kept = 0;
  for (const Listed& l : list_checkpoints(dir))
    if (l.run_id == s.run_id && ++kept > size_t(std::max(keep, 1))) ::unlink(l.path.c_str());
  return path;
}

bool load_newest_checkpoint(const std::string& dir, size_t expect_params, TrainState* out, std::string* path,
                            std::vector<std::string>* warnings) {
  for (const Listed& l : list_checkpoints(dir))
    if (decode_file(l.path, expect_params, out, warnings)) {
      *path = l.path;
      return true;
    }
  return false;
}

ResumeCandidates find_resume_candidates(const std::string& dir, size_t expect_params, const RunConfig& now,
                                        std::vector<std::string>* warnings) {
  ResumeCandidates c;
  for (const Listed& l : list_checkpoints(dir)) {
    TrainState st;
    if (!decode_file(l.path, expect_params, &st, warnings)) continue;
    bool matches = true;
    for (const SettingChange& ch : run_config_changes(run_config_of(st), st.has_settings, now))
      matches = matches && ch.kind != SettingChange::kNumbers;  // another world size continues the run
    if (matches) {
      c.have_match = true;
      c.match = std::move(st);
      c.match_path = l.path;
      return c;
    }
    if (!c.have_other) {
      c.have_other = true;
      c.other = std::move(st);
      c.other_path = l.path;
    }
  }
  return c;
}
