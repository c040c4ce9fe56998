// test_mnist: the IDX reader accepts good raw and .gz files in both layouts and names the file
// and the problem for every kind of bad data (also end to end through ./train).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <string>

#include "src/mnist.h"
#include "tests/test_util.h"

namespace {

using testutil::be32;
using testutil::idx_images;
using testutil::idx_labels;

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile g = gzopen(path.c_str(), "wb");
  gzwrite(g, bytes.data(), unsigned(bytes.size()));
  gzclose(g);
}

class MnistFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir = testutil::make_temp_dir("mnist"); }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  // Writes the images/labels pair and expects load_mnist_files to fail naming `bad` and `what`.
  void expect_error(const std::string& images, const std::string& labels, const std::string& bad,
                    const std::string& what) {
    testutil::write_file(dir + "/img", images);
    testutil::write_file(dir + "/lab", labels);
    try {
      load_mnist_files(dir + "/img", dir + "/lab");
      FAIL() << "no error for " << what;
    } catch (const DataError& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.rfind(dir + "/" + bad + ":", 0), 0u) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    }
  }
  std::string dir;
};

TEST_F(MnistFiles, GoodRawFiles) {
  testutil::write_file(dir + "/img", idx_images(5));
  testutil::write_file(dir + "/lab", idx_labels(5));
  MnistSplit s = load_mnist_files(dir + "/img", dir + "/lab");
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.rows, 28);
  EXPECT_EQ(s.labels[3], 3);
  EXPECT_EQ(s.pixels, nullptr);  // raw images are read on demand, never held or mapped
  uint8_t img[784];
  read_image(s, 0, img);
  EXPECT_EQ(img[1], 7);
  read_image(s, 4, img);
  EXPECT_EQ(img[5], uint8_t(((4 * 784 + 5) * 7) & 0xff));
}

TEST_F(MnistFiles, ImageFileShrinkingUnderATrainingRunIsNamed) {
  testutil::write_file(dir + "/img", idx_images(5));
  testutil::write_file(dir + "/lab", idx_labels(5));
  MnistSplit s = load_mnist_files(dir + "/img", dir + "/lab");
  ASSERT_EQ(::truncate((dir + "/img").c_str(), 16 + 2 * 784), 0);
  uint8_t img[784];
  read_image(s, 1, img);  // still there
  try {
    read_image(s, 3, img);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/img: shrank while in use"), std::string::npos) << e.what();
  }
}

TEST_F(MnistFiles, GoodGzFilesInflate) {
  write_gz(dir + "/img.gz", idx_images(3));
  write_gz(dir + "/lab.gz", idx_labels(3));
  MnistSplit s = load_mnist_files(dir + "/img.gz", dir + "/lab.gz");
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.labels[2], 2);
  EXPECT_EQ(s.pixels[2 * 784 + 5], uint8_t(((2 * 784 + 5) * 7) & 0xff));
}

TEST_F(MnistFiles, WrongMagic) {
  expect_error(idx_images(2, 28, 28, 0x801), idx_labels(2), "img", "bad magic 0x00000801");
  expect_error(idx_images(2), idx_labels(2, 0x803), "lab", "bad magic 0x00000803");
}

TEST_F(MnistFiles, Truncated) {
  std::string im = idx_images(4);
  expect_error(im.substr(0, im.size() - 100), idx_labels(4), "img", "truncated");
  expect_error(im.substr(0, 10), idx_labels(4), "img", "truncated IDX header");
  std::string lb = idx_labels(4);
  expect_error(im, lb.substr(0, lb.size() - 1), "lab", "truncated");
}

TEST_F(MnistFiles, TrailingBytes) { expect_error(idx_images(2) + "xx", idx_labels(2), "img", "bytes after"); }

TEST_F(MnistFiles, CountMismatch) { expect_error(idx_images(3), idx_labels(4), "lab", "holds 4 labels but"); }

TEST_F(MnistFiles, BadLabel) {
  std::string lb = idx_labels(6);
  lb[8 + 4] = char(11);
  expect_error(idx_images(6), lb, "lab", "label 11 at index 4");
}

TEST_F(MnistFiles, WrongImageSize) {
  expect_error(idx_images(2, 32, 32), idx_labels(2), "img", "wrong image size 32x32");
}

TEST_F(MnistFiles, EmptyFiles) {
  expect_error("", idx_labels(2), "img", "empty file");
  expect_error(idx_images(2), "", "lab", "empty file");
  expect_error(idx_images(0), idx_labels(0), "img", "no images");
}

TEST_F(MnistFiles, CorruptGzip) {
  std::string im = idx_images(3);
  write_gz(dir + "/img.gz", im);
  std::string gz = testutil::read_file(dir + "/img.gz");
  testutil::write_file(dir + "/img.gz", gz.substr(0, gz.size() / 2));
  testutil::write_file(dir + "/lab", idx_labels(3));
  try {
    load_mnist_files(dir + "/img.gz", dir + "/lab");
    FAIL() << "truncated gzip accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/img.gz: "), std::string::npos) << e.what();
  }
}

TEST_F(MnistFiles, MissingFileNamesPath) {
  try {
    load_mnist_files(dir + "/nope", dir + "/lab");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/nope: MNIST file cannot be opened: No such file"), std::string::npos);
  }
}

TEST_F(MnistFiles, BothDirectoryLayouts) {
  // Flat: DIR holds the files (train raw, test gz).
  testutil::write_file(dir + "/train-images-idx3-ubyte", idx_images(7));
  testutil::write_file(dir + "/train-labels-idx1-ubyte", idx_labels(7));
  write_gz(dir + "/t10k-images-idx3-ubyte.gz", idx_images(2));
  write_gz(dir + "/t10k-labels-idx1-ubyte.gz", idx_labels(2));
  EXPECT_EQ(load_mnist(dir, true).count, 7);
  EXPECT_EQ(load_mnist(dir + "/", false).count, 2);
  // torchvision: DIR/MNIST/raw/ wins over DIR.
  std::system(("mkdir -p '" + dir + "/MNIST/raw'").c_str());
  testutil::write_file(dir + "/MNIST/raw/train-images-idx3-ubyte", idx_images(9));
  testutil::write_file(dir + "/MNIST/raw/train-labels-idx1-ubyte", idx_labels(9));
  EXPECT_EQ(load_mnist(dir, true).count, 9);
}

TEST_F(MnistFiles, MissingDataSaysMakeData) {
  try {
    load_mnist(dir, true);
    FAIL();
  } catch (const DataError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(dir + "/MNIST/raw/"), std::string::npos) << m;
    EXPECT_NE(m.find("make data"), std::string::npos) << m;
  }
}

// End to end: ./train names the bad file, exits non-zero, prints no training line.
TEST_F(MnistFiles, TrainRejectsBadDataBeforeTraining) {
  testutil::write_file(dir + "/train-images-idx3-ubyte", idx_images(7));
  std::string lb = idx_labels(7);
  lb[8 + 2] = char(200);
  testutil::write_file(dir + "/train-labels-idx1-ubyte", lb);
  testutil::write_file(dir + "/t10k-images-idx3-ubyte", idx_images(2));
  testutil::write_file(dir + "/t10k-labels-idx1-ubyte", idx_labels(2));
  auto r = testutil::run(testutil::train_bin() + " --data-dir " + dir + " --epochs 1", 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("train: error: " + dir + "/train-labels-idx1-ubyte: label 200 at index 2"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("Train Epoch"), std::string::npos);
}

TEST(TrainMain, MissingDataNamesPathAndMakeData) {
  auto r = testutil::run(testutil::train_bin() + " --data-dir /nonexistent/mnist --epochs 1", 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent/mnist/MNIST/raw/"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("make data"), std::string::npos) << r.err;
}

}  // namespace
