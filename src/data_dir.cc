// data_dir: the data directory's lookup order and its error message (src/data_dir.h).
#include "src/data_dir.h"

namespace {

const char kOrder[] = "the data directory is --data-dir, else $BARESGD_DATA_DIR, else ./data";

}  // namespace

DataDirChoice choose_data_dir(bool flag_given, const std::string& flag_value, const char* env_value) {
  if (flag_given) return {flag_value, "--data-dir"};
  if (env_value != nullptr && *env_value != '\0') return {env_value, "$BARESGD_DATA_DIR"};
  return {"./data", "the default"};
}

std::string missing_data_message(const DataDirChoice& choice, const std::string& file, const std::string& raw_dir,
                                 const std::string& dir, bool installed) {
  std::string where = "MNIST " + file + "[.gz] not found in " + raw_dir + "/ or " + dir + "/";
  std::string why = " (" + std::string(kOrder) + "; here " +
                    (choice.source == "the default" ? "the default ./data" : "from " + choice.source) + ")";
  if (!installed) return where + " (run `make data` to fetch it, or pass --data-dir)" + why;
  return where + why +
         ": fetch the four MNIST IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
         "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; data/fetch_mnist.sh in baresgd's "
         "source fetches them) into DIR/MNIST/raw/, then pass --data-dir DIR or set BARESGD_DATA_DIR=DIR";
}
