// fixture: header-only reader for the PyTorch reference files written by tests/gen_fixtures.py.
//
// Format (little-endian): magic "BSGDFIX1" (8 bytes), uint32 version = 1, uint32 tensor count;
// per tensor: uint32 name length, name bytes, uint32 dtype (0 = float32, 1 = int32), uint32 ndim,
// int64 dims[ndim], then numel * 4 bytes of raw row-major data.
// Float tensors fill FixtureTensor::f, int32 tensors fill FixtureTensor::i.
// Tests run from the repository root and open "tests/fixtures/<family>.bin"; when the build defines
// BARESGD_SOURCE_DIR, fixture_path() prefixes it instead.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

struct FixtureTensor {
  std::vector<int64_t> shape;
  std::vector<float> f;    // dtype 0
  std::vector<int32_t> i;  // dtype 1
  size_t numel() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
};

inline std::string fixture_path(const std::string& file) {
#ifdef BARESGD_SOURCE_DIR
  return std::string(BARESGD_SOURCE_DIR) + "/tests/fixtures/" + file;
#else
  return "tests/fixtures/" + file;
#endif
}

class Fixture {
 public:
  explicit Fixture(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open (run tests from the repository root; regenerate: make fixtures)");
    char magic[8];
    read(in, magic, 8, "magic");
    if (std::memcmp(magic, "BSGDFIX1", 8) != 0) fail("bad magic, expected BSGDFIX1");
    const uint32_t version = read_u32(in, "version");
    if (version != 1) fail("unsupported version " + std::to_string(version));
    const uint32_t count = read_u32(in, "tensor count");
    for (uint32_t t = 0; t < count; ++t) {
      const uint32_t name_len = read_u32(in, "name length");
      if (name_len > 4096) fail("implausible name length " + std::to_string(name_len));
      std::string name(name_len, '\0');
      read(in, &name[0], name_len, "name");
      FixtureTensor ft;
      const uint32_t dtype = read_u32(in, name + " dtype");
      const uint32_t ndim = read_u32(in, name + " ndim");
      if (dtype > 1) fail("tensor '" + name + "' has unknown dtype " + std::to_string(dtype));
      if (ndim > 8) fail("tensor '" + name + "' has implausible ndim " + std::to_string(ndim));
      ft.shape.resize(ndim);
      for (uint32_t d = 0; d < ndim; ++d) {
        read(in, &ft.shape[d], sizeof(int64_t), name + " dims");
        if (ft.shape[d] < 0) fail("tensor '" + name + "' has a negative dim");
      }
      const size_t n = ft.numel();
      if (dtype == 0) {
        ft.f.resize(n);
        read(in, ft.f.data(), n * sizeof(float), name + " data");
      } else {
        ft.i.resize(n);
        read(in, ft.i.data(), n * sizeof(int32_t), name + " data");
      }
      if (!tensors_.emplace(name, std::move(ft)).second) fail("duplicate tensor '" + name + "'");
    }
  }

  const FixtureTensor& at(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) fail("no tensor named '" + name + "'");
    return it->second;
  }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error("fixture " + path_ + ": " + what); }
  void read(std::ifstream& in, void* dst, size_t bytes, const std::string& what) const {
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    if (!in) fail("truncated while reading " + what);
  }
  uint32_t read_u32(std::ifstream& in, const std::string& what) const {
    uint32_t v;
    read(in, &v, sizeof v, what);
    return v;
  }

  std::string path_;
  std::map<std::string, FixtureTensor> tensors_;
};
