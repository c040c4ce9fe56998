// test_big_endian: comm/big_endian.h, the byte order of the store's frames, the agent protocol
// and MNIST's IDX headers.
#include <gtest/gtest.h>

#include <string>

#include "comm/big_endian.h"
#include "comm/store_protocol.h"

TEST(BigEndian, LoadsMostSignificantByteFirst) {
  const unsigned char b[8] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0};
  EXPECT_EQ(load_u32be(b), 0x12345678u);
  EXPECT_EQ(load_u32be(b + 4), 0x9abcdef0u);  // high bit set: no sign extension
  EXPECT_EQ(load_u64be(b), 0x123456789abcdef0ull);
  const char idx_images[4] = {0, 0, 8, 3};  // MNIST's images magic
  EXPECT_EQ(load_u32be(idx_images), 0x803u);
}

TEST(BigEndian, AppendsWhatLoadReads) {
  std::string out = "x";
  append_u32be(&out, 0xfeedf00du);
  append_u64be(&out, 0x0102030405060708ull);
  ASSERT_EQ(out.size(), 13u);
  EXPECT_EQ(out.substr(1, 4), std::string("\xfe\xed\xf0\x0d", 4));
  EXPECT_EQ(out.substr(5), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(load_u32be(out.data() + 1), 0xfeedf00du);
  EXPECT_EQ(load_u64be(out.data() + 5), 0x0102030405060708ull);
}

TEST(BigEndian, StoreProtocolHelpersUseIt) {
  std::string out;
  put_i64be(&out, -2);
  put_u32be(&out, 7);
  EXPECT_EQ(out, std::string("\xff\xff\xff\xff\xff\xff\xff\xfe\x00\x00\x00\x07", 12));
  EXPECT_EQ(get_i64be(out.data()), -2);
  EXPECT_EQ(get_u32be(out.data() + 8), 7u);
  EXPECT_EQ(encode_frame("ab"), std::string("\x00\x00\x00\x02"
                                            "ab",
                                            6));
}
