// mnist: the MNIST IDX reader (raw files mapped read-only so ranks on a host share the page
// cache; .gz files inflated with zlib), with a one-line error naming the file for every defect.
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

// Bytes of one file, either mapped (raw) or owned (inflated .gz).
class FileBytes {
 public:
  static FileBytes open(const std::string& path);  // .gz by name suffix; throws DataError
  FileBytes() = default;
  FileBytes(FileBytes&&) noexcept;
  FileBytes& operator=(FileBytes&&) noexcept;
  ~FileBytes();
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops this process's page-table mappings of a mapped file (the page cache keeps the data, shared
  // by every rank on the host), so a rank's RSS holds only what it touched since. No-op for .gz.
  void release_pages() const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // non-null when mmapped
  std::unique_ptr<uint8_t[]> owned_;
  std::string path_;
};

// One split (train or test): count images of rows x cols uint8 pixels and their labels 0..9.
struct MnistSplit {
  FileBytes image_file, label_file;
  const uint8_t* pixels = nullptr;  // count * rows * cols
  const uint8_t* labels = nullptr;  // count
  int count = 0, rows = 0, cols = 0;
};

// Validates and wraps a pair of IDX files (images magic 0x803, labels 0x801, 28x28, counts
// equal, labels <= 9, exact sizes). Throws DataError naming the file and the problem.
MnistSplit load_mnist_files(const std::string& images_path, const std::string& labels_path);

// Finds the split under data_dir: data_dir/MNIST/raw/ (torchvision) or data_dir itself, each
// file raw or .gz. Missing: DataError naming where it looked and saying `make data`.
MnistSplit load_mnist(const std::string& data_dir, bool train);
