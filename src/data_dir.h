// data_dir: where ./train takes MNIST from — --data-dir, else $BARESGD_DATA_DIR, else ./data —
// and the one-line error when the chosen directory lacks a file (pure; train_main does the I/O).
#pragma once
#include <string>

struct DataDirChoice {
  std::string dir;
  std::string source;  // "--data-dir", "$BARESGD_DATA_DIR" or "the default"
};

// flag_given: --data-dir was on the command line (flag_value is its value). env_value: the
// value of $BARESGD_DATA_DIR or nullptr; an empty value counts as unset.
DataDirChoice choose_data_dir(bool flag_given, const std::string& flag_value, const char* env_value);

// The error for a split file ("train-images-idx3-ubyte") found in neither candidate directory
// (DIR/MNIST/raw and DIR). installed: the program runs as an installed baresgd-train, where
// `make data` means nothing, so the message says how to fetch the files instead.
std::string missing_data_message(const DataDirChoice& choice, const std::string& file, const std::string& raw_dir,
                                 const std::string& dir, bool installed);
