// tests/data/shard_test.cpp: llm.c-compatible shard files, written atomically and validated on
// open (bad magic, truncation, padding).
#include "data/shard.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::data {

static std::string write_shard(const std::string& path, const std::vector<uint32_t>& t, int bpt) {
  ShardWriter w(path, bpt);
  w.append(t.data(), t.size() / 2);
  w.append(t.data() + t.size() / 2, t.size() - t.size() / 2);
  w.commit();
  return path;
}

TEST(Shard, WriteReadBothWidths) {
  test::TempDir tmp;
  std::vector<uint32_t> t{0, 1, 50256, 65535, 7};
  Shard a(write_shard(tmp / "a.bin", t, 2));
  ASSERT_EQ(a.size(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a[i], t[i]);
  t.push_back(100000);
  Shard b(write_shard(tmp / "b.bin", t, 4));
  ASSERT_EQ(b.size(), 6);
  EXPECT_EQ(b[5], 100000u);
  EXPECT_EQ(bytes_per_token_for(65536), 2);
  EXPECT_EQ(bytes_per_token_for(65537), 4);
}

TEST(Shard, HeaderIsLlmcLayout) {
  test::TempDir tmp;
  write_shard(tmp / "a.bin", {5, 6, 7}, 2);
  std::string raw = read_file(tmp / "a.bin");
  ASSERT_EQ(raw.size(), 1024u + 6u);
  int32_t h[3];
  std::memcpy(h, raw.data(), sizeof h);
  EXPECT_EQ(h[0], 20240520);
  EXPECT_EQ(h[1], 1);
  EXPECT_EQ(h[2], 3);
}

TEST(Shard, CorruptFilesAreRejectedWithTheirName) {
  test::TempDir tmp;
  write_shard(tmp / "a.bin", {1, 2, 3, 4}, 2);
  std::string raw = read_file(tmp / "a.bin");
  auto error_of = [&](const std::string& contents) -> std::string {
    test::write(tmp / "bad.bin", contents);
    try {
      Shard s(tmp / "bad.bin");
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(raw.substr(0, raw.size() - 1)).find("bad.bin: corrupt shard: header says 4 tokens"),
            std::string::npos);
  EXPECT_NE(error_of(raw + "xx").find("corrupt shard"), std::string::npos);
  std::string bad_magic = raw;
  bad_magic[0] = 'X';
  EXPECT_NE(error_of(bad_magic).find("bad.bin: not a token shard: bad magic"), std::string::npos);
  EXPECT_NE(error_of("tiny").find("shorter than the 1024-byte header"), std::string::npos);
}

}  // namespace slm::data
