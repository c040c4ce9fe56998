// sample_record: writing --sample-record FILE (see sample_record.h).
#include "src/sample_record.h"
#include "src/safe_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

long long sample_record_step(const std::string& line) {
  size_t k = 0;
  long long step = 0;
  while (k < line.size() && line[k] >= '0' && line[k] <= '9' && k < 18) step = step * 10 + (line[k++] - '0');
  return k > 0 && k < line.size() && line[k] == ' ' ? step : -1;
}

SampleRecord::SampleRecord(const std::string& path, uint64_t resume_step) : path_(path) {
  std::string kept;
  if (resume_step > 0) {
    std::ifstream in(path);
    for (std::string line; in && std::getline(in, line);) {
      const long long s = sample_record_step(line);
      if (s >= 0 && uint64_t(s) < resume_step) kept += line + "\n";
    }
  }
  f_ = create_output_stream(path, "--sample-record file");  // no symlink followed (src/safe_file.h)
  if (!kept.empty() && std::fwrite(kept.data(), 1, kept.size(), f_) != kept.size())
    throw std::runtime_error("--sample-record " + path + ": write failed: " + std::strerror(errno));
}

SampleRecord::~SampleRecord() {
  if (f_) std::fclose(f_);
}

void SampleRecord::begin_epoch(size_t dataset_size, int world, uint64_t epoch, size_t first_sample) {
  ranks_.clear();
  for (int r = 0; r < world; ++r) {
    ranks_.emplace_back(dataset_size, world, r, true, 0);
    ranks_.back().set_epoch(epoch, first_sample);
  }
}

void SampleRecord::record_step(uint64_t step, int epoch, size_t b, size_t batch_size) {
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const std::vector<uint32_t>& idx = ranks_[r].indices();
    std::string line = std::to_string(step) + " " + std::to_string(epoch) + " " + std::to_string(r);
    for (size_t i = b * batch_size; i < idx.size() && i < (b + 1) * batch_size; ++i)
      line += " " + std::to_string(idx[i]);
    line += "\n";
    if (std::fwrite(line.data(), 1, line.size(), f_) != line.size())
      throw std::runtime_error("--sample-record " + path_ + ": write failed: " + std::strerror(errno));
  }
  std::fflush(f_);
}
