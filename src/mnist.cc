// mnist: IDX parsing and validation for MNIST, raw (pread) and gzip (zlib) files.
#include "src/mnist.h"
#include "src/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "comm/big_endian.h"

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr size_t kMaxInflated = size_t(1) << 31;  // 2 GiB: far beyond any MNIST split

uint32_t be32(const uint8_t* p) { return load_u32be(p); }

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw DataError(path + ": " + what); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Present as anything: a FIFO or a directory in a data file's place is found here and named as
// what it is when opened (FileBytes::open), not reported as missing.
bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// The IDX header's checks, in load_mnist_files' words: the file's whole size the first bytes
// announce (magic, 28x28 images, count), 0 while fewer than the header's bytes are known.
uint64_t announced_bytes(const std::string& path, uint32_t expect_magic, const uint8_t* p, size_t have) {
  if (have < 4) return 0;
  const uint32_t magic = be32(p);
  if (magic != expect_magic)
    fail(path, "bad magic " + hex32(magic) + " (expected " + hex32(expect_magic) +
                   (expect_magic == kImagesMagic ? ", IDX unsigned-byte images)" : ", IDX unsigned-byte labels)"));
  if (magic == kLabelsMagic) return have < 8 ? 0 : 8 + uint64_t(be32(p + 4));
  if (have < 16) return 0;
  const uint32_t n = be32(p + 4), rows = be32(p + 8), cols = be32(p + 12);
  if (rows != 28 || cols != 28)
    fail(path, "wrong image size " + std::to_string(rows) + "x" + std::to_string(cols) + " (MNIST images are 28x28)");
  if (n == 0) fail(path, "holds no images");
  return 16 + uint64_t(n) * rows * cols;
}

}  // namespace

FileBytes::FileBytes(FileBytes&& o) noexcept { *this = std::move(o); }

FileBytes& FileBytes::operator=(FileBytes&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    data_ = o.data_;
    size_ = o.size_;
    fd_ = o.fd_;
    owned_ = std::move(o.owned_);
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
    o.fd_ = -1;
  }
  return *this;
}

FileBytes::~FileBytes() {
  if (fd_ >= 0) ::close(fd_);
}

void FileBytes::read(uint64_t offset, size_t n, uint8_t* out) const {
  if (offset > size_ || n > size_ - offset)
    fail(path_, "read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) + " is past the end (" +
                    std::to_string(size_) + " bytes)");
  if (data_) {
    std::memcpy(out, data_ + offset, n);
    return;
  }
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd_, out + done, n - done, off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path_, std::string("read error: ") + std::strerror(errno));
    if (got == 0)
      fail(path_, "shrank while in use (read past its end at offset " + std::to_string(offset + done) + ")");
    done += size_t(got);
  }
}

namespace {

// A data file opened for reading: a regular file of at most max_bytes (a FIFO, a directory or a
// device in its place is named as what it is; a FIFO never blocks the open: src/safe_file.h).
int open_data_file(const std::string& path, size_t max_bytes, size_t* size = nullptr) {
  size_t got = 0;
  try {
    const int fd = open_regular_for_read(path, max_bytes, "MNIST file", &got);
    if (size) *size = got;
    return fd;
  } catch (const SafeFileError& e) {
    throw DataError(e.what());
  }
}

// A gzFile closed on every way out.
struct GzFile {
  gzFile gz;
  ~GzFile() {
    if (gz) gzclose(gz);
  }
};

// The inflated bytes of a .gz file. Inflation stops as soon as the header is wrong or the data
// pass the size it announces (idx_magic != 0): a gzip bomb costs one chunk, not gigabytes.
std::vector<uint8_t> inflate_file(const std::string& path, uint32_t idx_magic) {
  const int fd = open_data_file(path, kMaxInflated);
  GzFile file{gzdopen(fd, "rb")};
  if (!file.gz) {
    ::close(fd);
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  }
  std::vector<uint8_t> buf;
  uint8_t chunk[1 << 16];
  uint64_t announced = 0;
  for (;;) {
    int n = gzread(file.gz, chunk, sizeof chunk);
    if (n < 0) {
      int err = 0;
      fail(path, "corrupt gzip data (" + std::string(gzerror(file.gz, &err)) + ")");
    }
    if (n == 0) break;
    if (buf.size() + size_t(n) > kMaxInflated) fail(path, "inflates to more than 2 GiB; not an MNIST file");
    buf.insert(buf.end(), chunk, chunk + n);
    if (announced == 0 && idx_magic != 0) {
      announced = announced_bytes(path, idx_magic, buf.data(), buf.size());
      if (announced > kMaxInflated)
        fail(path, "header announces " + std::to_string(announced) + " bytes, more than 2 GiB; not an MNIST file");
    }
    if (announced != 0 && buf.size() > announced)
      fail(path, "inflates past the " + std::to_string(announced) + " bytes its header announces");
  }
  // gzread returns 0 on a truncated stream too; zlib reports it through gzerror.
  int err = Z_OK;
  const char* msg = gzerror(file.gz, &err);
  if (err != Z_OK && err != Z_STREAM_END) fail(path, "corrupt or truncated gzip data (" + std::string(msg) + ")");
  return buf;
}

struct ImagesHeader {
  uint32_t count, rows, cols;
};

// Checks an IDX images file's header and length (every defect named with the file).
ImagesHeader check_images(const std::string& path, const FileBytes& im) {
  if (im.size() == 0) fail(path, "empty file");
  if (im.size() < 16) fail(path, "truncated IDX header (" + std::to_string(im.size()) + " bytes, need 16)");
  uint8_t head[16];
  im.read(0, sizeof head, head);
  if (be32(head) != kImagesMagic)
    fail(path, "bad magic " + hex32(be32(head)) + " (expected " + hex32(kImagesMagic) + ", IDX unsigned-byte images)");
  const ImagesHeader h{be32(head + 4), be32(head + 8), be32(head + 12)};
  if (h.rows != 28 || h.cols != 28)
    fail(path,
         "wrong image size " + std::to_string(h.rows) + "x" + std::to_string(h.cols) + " (MNIST images are 28x28)");
  if (h.count == 0) fail(path, "holds no images");
  const uint64_t want = 16 + uint64_t(h.count) * h.rows * h.cols;
  if (im.size() < want)
    fail(path, "truncated: header says " + std::to_string(h.count) + " images (" + std::to_string(want) +
                   " bytes) but the file has " + std::to_string(im.size()) + " bytes");
  if (im.size() > want)
    fail(path, "has " + std::to_string(im.size() - want) + " bytes after the " + std::to_string(h.count) +
                   " images its header announces");
  return h;
}

// Checks an IDX labels file's header, length and labels against the images file's count.
void check_labels(const std::string& path, const FileBytes& lb, uint32_t images, const std::string& images_path) {
  if (lb.size() == 0) fail(path, "empty file");
  if (lb.size() < 8) fail(path, "truncated IDX header (" + std::to_string(lb.size()) + " bytes, need 8)");
  if (be32(lb.data()) != kLabelsMagic)
    fail(path,
         "bad magic " + hex32(be32(lb.data())) + " (expected " + hex32(kLabelsMagic) + ", IDX unsigned-byte labels)");
  const uint32_t nl = be32(lb.data() + 4);
  if (lb.size() < 8 + uint64_t(nl))
    fail(path, "truncated: header says " + std::to_string(nl) + " labels (" + std::to_string(8 + uint64_t(nl)) +
                   " bytes) but the file has " + std::to_string(lb.size()) + " bytes");
  if (lb.size() > 8 + uint64_t(nl))
    fail(path, "has " + std::to_string(lb.size() - 8 - nl) + " bytes after the " + std::to_string(nl) +
                   " labels its header announces");
  if (nl != images)
    fail(path,
         "holds " + std::to_string(nl) + " labels but " + images_path + " holds " + std::to_string(images) + " images");
  const uint8_t* labels = lb.data() + 8;
  for (uint32_t i = 0; i < nl; ++i)
    if (labels[i] > 9)
      fail(path, "label " + std::to_string(labels[i]) + " at index " + std::to_string(i) + " (MNIST labels are 0..9)");
}

}  // namespace

FileBytes FileBytes::open(const std::string& path, bool whole, uint32_t idx_magic) {
  FileBytes fb;
  fb.path_ = path;
  if (ends_with(path, ".gz")) {
    const std::vector<uint8_t> buf = inflate_file(path, idx_magic);
    fb.size_ = buf.size();
    fb.owned_.reset(new uint8_t[buf.size() ? buf.size() : 1]);
    if (!buf.empty()) std::memcpy(fb.owned_.get(), buf.data(), buf.size());
    fb.data_ = fb.owned_.get();
    return fb;
  }
  size_t size = 0;
  const int fd = open_data_file(path, kMaxInflated, &size);
  fb.size_ = size;
  fb.fd_ = fd;
  if (whole) {
    fb.owned_.reset(new uint8_t[fb.size_ ? fb.size_ : 1]);
    fb.read(0, fb.size_, fb.owned_.get());  // throws (and the destructor closes fd)
    fb.data_ = fb.owned_.get();
    ::close(fb.fd_);
    fb.fd_ = -1;
  }
  return fb;
}

MnistSplit load_mnist_files(const std::string& images_path, const std::string& labels_path) {
  MnistSplit s;
  s.image_file = FileBytes::open(images_path, /*whole=*/false, kImagesMagic);
  s.label_file = FileBytes::open(labels_path, /*whole=*/true, kLabelsMagic);
  const ImagesHeader h = check_images(images_path, s.image_file);
  check_labels(labels_path, s.label_file, h.count, images_path);
  s.pixels = s.image_file.data() ? s.image_file.data() + 16 : nullptr;
  s.labels = s.label_file.data() + 8;
  s.count = int(h.count);
  s.rows = int(h.rows);
  s.cols = int(h.cols);
  return s;
}

void read_image(const MnistSplit& split, size_t i, uint8_t* out) {
  const size_t plane = size_t(split.rows) * size_t(split.cols);
  if (split.pixels)
    std::memcpy(out, split.pixels + i * plane, plane);
  else
    split.image_file.read(16 + uint64_t(i) * plane, plane, out);
}

MnistLookup find_mnist(const std::string& data_dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  MnistLookup l;
  l.names[0] = prefix + "-images-idx3-ubyte";
  l.names[1] = prefix + "-labels-idx1-ubyte";
  std::string dir = data_dir.empty() ? "." : data_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  l.candidates[0] = dir + "/MNIST/raw";
  l.candidates[1] = dir;
  for (const auto& c : l.candidates) {
    for (int k = 0; k < 2; ++k) {
      if (!l.found[k].empty()) continue;
      if (exists(c + "/" + l.names[k]))
        l.found[k] = c + "/" + l.names[k];
      else if (exists(c + "/" + l.names[k] + ".gz"))
        l.found[k] = c + "/" + l.names[k] + ".gz";
    }
    if (!l.found[0].empty() || !l.found[1].empty()) break;  // one layout per split, never mixed
  }
  return l;
}

MnistSplit load_mnist(const std::string& data_dir, bool train) {
  MnistLookup l = find_mnist(data_dir, train);
  for (int k = 0; k < 2; ++k)
    if (l.found[k].empty())
      throw DataError("MNIST " + l.names[k] + "[.gz] not found in " + l.candidates[0] + "/ or " + l.candidates[1] +
                      "/ (run `make data` to fetch it, or pass --data-dir)");
  return load_mnist_files(l.found[0], l.found[1]);
}
