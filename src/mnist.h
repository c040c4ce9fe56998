// mnist: the MNIST IDX reader (raw image files read per record with pread, so ranks on a host share
// the page cache and hold no copy; .gz files inflated with zlib), with a one-line error naming the
// file for every defect.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

// A thrown data error: message is "<path>: <problem>".
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bytes of one file. A raw file is either read into memory whole (labels: 60 KB) or kept open and
// read record by record with pread (images: 47 MB). Reading, unlike mapping, costs a rank only the
// records it is gathering right now: the page cache holds the file once for every rank on the host,
// and no rank's RSS ever counts its pages (a mapping counts every page it touched, 64 KB per fault).
// .gz files are inflated into memory, at most what their IDX header announces.
class FileBytes {
 public:
  // .gz by name suffix; whole=false keeps a raw file open for read(). Throws DataError.
  // idx_magic (0x803 images, 0x801 labels; 0: not checked): a .gz stops inflating as soon as its
  // header is wrong (magic, image size, no images, more than 2 GiB announced) or the data pass
  // the size the header announces.
  static FileBytes open(const std::string& path, bool whole = true, uint32_t idx_magic = 0);
  FileBytes() = default;
  FileBytes(FileBytes&&) noexcept;
  FileBytes& operator=(FileBytes&&) noexcept;
  ~FileBytes();
  // The bytes when they are in memory (.gz, or opened whole); nullptr for a file read on demand.
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Copies bytes [offset, offset + n) to out. Throws DataError naming the file when they cannot be
  // read (the file shrank or failed underneath us).
  void read(uint64_t offset, size_t n, uint8_t* out) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // >= 0 when read on demand
  std::unique_ptr<uint8_t[]> owned_;
  std::string path_;
};

// One split (train or test): count images of rows x cols uint8 pixels and their labels 0..9.
struct MnistSplit {
  FileBytes image_file, label_file;
  const uint8_t* pixels = nullptr;  // count * rows * cols when in memory; nullptr: read image_file
  const uint8_t* labels = nullptr;  // count
  int count = 0, rows = 0, cols = 0;
};

// Validates and wraps a pair of IDX files (images magic 0x803, labels 0x801, 28x28, counts
// equal, labels <= 9, exact sizes). Throws DataError naming the file and the problem.
MnistSplit load_mnist_files(const std::string& images_path, const std::string& labels_path);

// Copies image i's rows * cols pixels to out (from memory, or read from the file).
void read_image(const MnistSplit& split, size_t i, uint8_t* out);

// Where a split's two files (images, labels) are under data_dir: data_dir/MNIST/raw/ (torchvision)
// or data_dir itself, each raw or .gz; found[k] is "" for a file in neither.
struct MnistLookup {
  std::string names[2];       // "train-images-idx3-ubyte", "train-labels-idx1-ubyte" (no .gz)
  std::string candidates[2];  // data_dir/MNIST/raw, data_dir (no trailing '/')
  std::string found[2];
};
MnistLookup find_mnist(const std::string& data_dir, bool train);

// Finds the split under data_dir (find_mnist): data_dir/MNIST/raw/ (torchvision) or data_dir itself, each
// file raw or .gz. Missing: DataError naming where it looked and saying `make data`.
MnistSplit load_mnist(const std::string& data_dir, bool train);
