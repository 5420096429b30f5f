// The protobuf wire reader: fields of each wire type, and named errors for truncated or invalid messages.
#include "examples/llm/tokenizer/protobuf.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace llm {
namespace {

using namespace std::string_literals;

TEST(Protobuf, ReadsEveryWireType) {
  // field 1 varint 300; field 2 fixed32 1.5f; field 3 "hi"; field 4 fixed64 7.
  const std::string msg = "\x08\xAC\x02"s + "\x15\x00\x00\xC0\x3F"s + "\x1A\x02hi"s + "\x21\x07\0\0\0\0\0\0\0"s;
  auto fields = parse_proto(msg, "Test");
  ASSERT_TRUE(fields.ok());
  ASSERT_EQ(fields->size(), 4u);
  EXPECT_EQ((*fields)[0].number, 1u);
  EXPECT_EQ((*fields)[0].value, 300u);
  EXPECT_FLOAT_EQ((*fields)[1].as_float(), 1.5f);
  EXPECT_EQ((*fields)[2].bytes, "hi");
  EXPECT_EQ((*fields)[3].type, WireType::kFixed64);
  EXPECT_EQ((*fields)[3].value, 7u);
}

struct Bad {
  std::string message;
  const char* log;
};

class ProtobufErrors : public ::testing::TestWithParam<Bad> {};

TEST_P(ProtobufErrors, AreNamed) {
  testing::clear_log();
  auto fields = parse_proto(GetParam().message, "Test");
  ASSERT_FALSE(fields.ok());
  EXPECT_EQ(fields.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), GetParam().log);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ProtobufErrors,
    ::testing::Values(
        Bad{"\x08\xAC"s,
            "protobuf Test: field 1 (wire type 0, varint) at byte 0: the value is truncated or over 10 bytes (the "
            "message ends at byte 2)"},
        Bad{"\x80"s, "protobuf Test: field key at byte 0 is truncated (the message ends at byte 1)"},
        Bad{"\x1A\x05hi"s,
            "protobuf Test: field 3 (wire type 2, length-delimited) at byte 0: length 5 runs past the end (2 bytes "
            "left)"},
        Bad{"\x1A"s,
            "protobuf Test: field 3 (wire type 2, length-delimited) at byte 0: the length is truncated (the message "
            "ends at byte 1)"},
        Bad{"\x15\x00\x00"s,
            "protobuf Test: field 2 (wire type 5, 32-bit) at byte 0: the 4-byte value is truncated (2 bytes left)"},
        Bad{"\x0B"s, "protobuf Test: field 1 at byte 0 has wire type 3, which is not supported (groups or invalid)"},
        Bad{"\x00\x01"s, "protobuf Test: field number 0 (wire type 0) at byte 0 is outside [1, 2^29)"},
        Bad{"\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01"s,
            "protobuf Test: field 1 (wire type 0, varint) at byte 0: the value is truncated or over 10 bytes (the "
            "message ends at byte 12)"}));

TEST(Protobuf, OffsetsAreTheFilesAndRefusalsGoToTheCallersString) {
  // A nested message that starts inside its file: offsets count from the file's start.
  auto fields = parse_proto("\x08\x01\x12\x02hi"s, "Nested", nullptr, 40);
  ASSERT_TRUE(fields.ok());
  EXPECT_EQ((*fields)[1].offset, 42u);
  EXPECT_EQ((*fields)[1].value_offset, 44u);
  testing::clear_log();
  std::string why;
  auto bad = parse_proto("\x08\x01\x0F"s, "Nested", &why, 40);
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
  EXPECT_EQ(why, "protobuf Nested: field 1 at byte 42 has wire type 7, which is not supported (groups or invalid)");
  EXPECT_EQ(testing::last_log(), "");
}

}  // namespace
}  // namespace llm
}  // namespace ember
