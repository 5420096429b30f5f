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
    ::testing::Values(Bad{"\x08\xAC"s, "protobuf Test: field 1: truncated varint at byte 1 of 2"},
                      Bad{"\x80"s, "protobuf Test: truncated field key at byte 0 of 1"},
                      Bad{"\x1A\x05hi"s, "protobuf Test: field 3: length 5 at byte 0 runs past the end (2 bytes left)"},
                      Bad{"\x1A"s, "protobuf Test: field 3: truncated length at byte 1 of 1"},
                      Bad{"\x15\x00\x00"s, "protobuf Test: field 2: 4-byte value truncated at byte 1 of 3"},
                      Bad{"\x0B"s,
                          "protobuf Test: field 1: wire type 3 at byte 0 is not supported (groups or invalid)"},
                      Bad{"\x00\x01"s, "protobuf Test: invalid field number 0 at byte 0"},
                      Bad{"\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01"s,
                          "protobuf Test: field 1: truncated varint at byte 1 of 12"}));

}  // namespace
}  // namespace llm
}  // namespace ember
