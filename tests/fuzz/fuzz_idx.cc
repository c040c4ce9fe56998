// fuzz_idx: libFuzzer target for the MNIST IDX reader (src/mnist.h load_mnist_files: raw files
// through mmap, .gz files through zlib).
//
// load_mnist_files takes paths, so each input is written to two files in a private directory
// under /dev/shm (memory, no disk traffic) and read back from there.
// Input: byte 0 = flags, then by mode:
//   flags bit 0 clear: raw — bytes 1-2 = where the rest splits into the images file and the
//     labels file;
//   flags bit 0 set: structured — an images header (magic, count 0..4, rows, cols, each either
//     right or taken raw from the input), the pixels, a labels header and labels (count and
//     values right or raw), then a size change (bytes cut off or appended) per file, so every
//     validation step is reached with the others passing;
//   flags bit 1 / bit 2: store the images / labels file gzip-compressed under a .gz name;
//   flags bit 3: give the images file a .gz name but raw contents (zlib sees garbage).
// Contract checked: load_mnist_files returns or throws DataError whose message starts with the
// path of the bad file; an accepted split has count >= 1, 28x28 images, labels 0..9, and files
// of exactly 16 + count*784 and 8 + count bytes.
//
// Build: make fuzz (build-fuzz/fuzz_idx); run: .ci/fuzz.sh
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "src/mnist.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::string be32(uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

const std::string& shm_dir() {
  static std::string dir;
  if (dir.empty()) {
    dir = "/dev/shm/bsgd-fuzz-idx-" + std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0700);
  }
  return dir;
}

void write_raw(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile g = gzopen(path.c_str(), "wb1");
  FUZZ_CHECK(g != nullptr);
  if (!bytes.empty()) gzwrite(g, bytes.data(), unsigned(bytes.size()));
  gzclose(g);
}

// Cuts off or appends bytes, as the input says.
void resize_by(FuzzInput& in, std::string* s) {
  const uint8_t r = in.u8();
  if (r < 200) return;  // mostly leave the size alone
  if (r & 1)
    s->resize(s->size() - std::min<size_t>(s->size(), 1 + in.u8() % 32));
  else
    s->append(1 + in.u8() % 8, char(in.u8()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const uint8_t flags = in.u8();
  std::string images, labels;
  if (!(flags & 1)) {
    const size_t split = in.u16();
    std::string rest = in.rest();
    images = rest.substr(0, std::min(split, rest.size()));
    labels = rest.substr(std::min(split, rest.size()));
  } else {
    const uint8_t shape = in.u8();
    const uint32_t magic = (shape & 1) ? in.u32() : 0x803u;
    uint32_t count = in.u8() % 5;
    const uint32_t rows = (shape & 2) ? in.u8() : 28;
    const uint32_t cols = (shape & 4) ? in.u8() : 28;
    images = be32(magic) + be32(count) + be32(rows) + be32(cols);
    // Pixels for the announced count (bounded; rows/cols may be anything).
    const size_t pixels = std::min<size_t>(size_t(count) * rows * cols, 4 * 784);
    for (size_t k = 0; k < pixels; ++k) images.push_back(char(k * 31));
    const uint32_t lmagic = (shape & 8) ? in.u32() : 0x801u;
    const uint32_t lcount = (shape & 16) ? in.u8() % 6 : count;
    labels = be32(lmagic) + be32(lcount);
    for (uint32_t k = 0; k < lcount; ++k) labels.push_back(char((shape & 32) ? in.u8() : in.u8() % 10));
    resize_by(in, &images);
    resize_by(in, &labels);
  }

  const std::string& dir = shm_dir();
  const std::string img = dir + "/img", lab = dir + "/lab";
  for (const std::string& p : {img, img + ".gz", lab, lab + ".gz"}) ::unlink(p.c_str());
  std::string img_path = img, lab_path = lab;
  if (flags & 2) {
    img_path += ".gz";
    write_gz(img_path, images);
  } else if (flags & 8) {
    img_path += ".gz";
    write_raw(img_path, images);
  } else {
    write_raw(img_path, images);
  }
  if (flags & 4) {
    lab_path += ".gz";
    write_gz(lab_path, labels);
  } else {
    write_raw(lab_path, labels);
  }

  try {
    MnistSplit s = load_mnist_files(img_path, lab_path);
    FUZZ_CHECK(s.count >= 1 && s.rows == 28 && s.cols == 28);
    FUZZ_CHECK(s.image_file.size() == 16 + size_t(s.count) * 784);
    FUZZ_CHECK(s.label_file.size() == 8 + size_t(s.count));
    // Raw images are read on demand (no pixels in memory), .gz ones inflated into memory.
    FUZZ_CHECK(s.image_file.data() ? s.pixels == s.image_file.data() + 16 : s.pixels == nullptr);
    FUZZ_CHECK(s.labels == s.label_file.data() + 8);
    for (int k = 0; k < s.count; ++k) FUZZ_CHECK(s.labels[k] <= 9);
    // The bytes are what was written, whichever way they are read.
    std::string got(s.image_file.size(), '\0');
    s.image_file.read(0, got.size(), reinterpret_cast<uint8_t*>(&got[0]));
    FUZZ_CHECK(got == images);
    std::string last(784, '\0');
    read_image(s, size_t(s.count - 1), reinterpret_cast<uint8_t*>(&last[0]));
    FUZZ_CHECK(last == images.substr(images.size() - 784));
    FUZZ_CHECK(std::string(reinterpret_cast<const char*>(s.label_file.data()), s.label_file.size()) == labels);
  } catch (const DataError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind(img_path + ": ", 0) == 0 || m.rfind(lab_path + ": ", 0) == 0);
    FUZZ_CHECK(m.find('\n') == std::string::npos);
  }
  return 0;
}
