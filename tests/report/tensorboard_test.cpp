// tests/report/tensorboard_test.cpp: the event file's framing against published values (CRC-32C's
// check value, TFRecord's mask), the protobuf bytes of a scalar event, the tags of metrics fields,
// and the file a writer leaves. (tests/e2e/train_resume.sh reads a run's file with TensorBoard's
// own reader.)
#include "report/tensorboard.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"
#include "util/files.h"

namespace slm::report {
namespace {

TEST(TensorBoard, Crc32cAndRecordFraming) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the standard check value of CRC-32C
  EXPECT_EQ(crc32c(""), 0u);
  const uint32_t c = crc32c("abc");
  EXPECT_EQ(masked_crc32c("abc"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
  const std::string r = tfrecord("hello");
  ASSERT_EQ(r.size(), 8u + 4u + 5u + 4u);
  EXPECT_EQ(r.substr(0, 8), std::string("\x05\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(r.substr(12, 5), "hello");
}

TEST(TensorBoard, ScalarEventBytes) {
  // wall_time 1.5, step 3, one value "a" = 2.0f: hand-encoded protobuf.
  const std::string want = std::string("\x09\0\0\0\0\0\0\xF8\x3F", 9)  // field 1, double 1.5
                           + std::string("\x10\x03", 2)                 // field 2, varint 3
                           + std::string("\x2A\x0A\x0A\x08\x0A\x01" "a\x15\0\0\0\x40", 12);  // summary { value { tag "a" simple_value 2 } }
  EXPECT_EQ(event_proto(1.5, 3, "", {{"a", 2.0f}}), want);
  EXPECT_EQ(event_proto(0, 0, "brain.Event:2", {}),
            std::string("\x09\0\0\0\0\0\0\0\0\x10\x00\x1A\x0D", 13) + "brain.Event:2");
}

TEST(TensorBoard, TagsGroupTheFields) {
  EXPECT_EQ(tensorboard_tag("loss"), "loss/train");
  EXPECT_EQ(tensorboard_tag("val_loss"), "loss/val");
  EXPECT_EQ(tensorboard_tag("val_loss/data/code"), "loss/val/data/code");  // a mixed dataset's
  EXPECT_EQ(tensorboard_tag("tokens_per_s"), "speed/tokens_per_s");
  EXPECT_EQ(tensorboard_tag("bytes_dp"), "comm/bytes_dp");
  EXPECT_EQ(tensorboard_tag("tokens_per_usd"), "cost/tokens_per_usd");
  EXPECT_EQ(tensorboard_tag("step"), "");
  EXPECT_EQ(tensorboard_tag("time"), "");
}

TEST(TensorBoard, WriterAppendsFramedRecords) {
  test::TempDir tmp;
  std::string path;
  {
    TensorBoardWriter w(tmp.path);
    w.scalars(1, 10.0, {{"loss/train", 5.0f}});
    w.scalars(2, 11.0, {{"loss/train", 4.0f}, {"speed/mfu", 0.25f}});
    path = w.path();
  }
  EXPECT_NE(path.find("/events.out.tfevents."), std::string::npos);
  const std::string data = read_file(path);
  size_t at = 0, records = 0;
  while (at < data.size()) {  // each record's length and checksums hold
    uint64_t len = 0;
    std::memcpy(&len, data.data() + at, 8);
    uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&len_crc, data.data() + at + 8, 4);
    ASSERT_EQ(len_crc, masked_crc32c(data.substr(at, 8)));
    std::memcpy(&data_crc, data.data() + at + 12 + len, 4);
    ASSERT_EQ(data_crc, masked_crc32c(data.substr(at + 12, len)));
    at += 16 + len;
    ++records;
  }
  EXPECT_EQ(at, data.size());
  EXPECT_EQ(records, 3u);  // the version event and two steps
}

}  // namespace
}  // namespace slm::report
