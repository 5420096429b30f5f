#include "schema/extended_header.h"

#include <gtest/gtest.h>
#include <string.h>

#include <vector>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

namespace eh = extended_header;

// The first kHeadBytes of a file: root offset, "ET12", then a header with these values.
std::vector<uint8_t> head(uint64_t program_size, uint64_t base, uint64_t size, uint32_t length = eh::kLength) {
  std::vector<uint8_t> b(eh::kHeadBytes, 0);
  memcpy(b.data() + 4, "ET12", 4);
  ExtendedHeader h;
  h.program_size = program_size;
  h.segment_base_offset = base;
  h.segment_data_size = size;
  write_extended_header(h, b.data());
  for (int i = 0; i < 4; ++i) b[eh::kLengthOffset + i] = static_cast<uint8_t>(length >> (8 * i));
  return b;
}

TEST(ExtendedHeader, WritesLittleEndianFieldsAtTheirOffsets) {
  const auto b = head(0x0102030405060708ull, 0x1112131415161718ull, 0x21);
  EXPECT_EQ(memcmp(b.data() + 8, "eh00", 4), 0);
  EXPECT_EQ(b[12], 32);
  EXPECT_EQ(b[13] | b[14] | b[15], 0);
  EXPECT_EQ(b[16], 0x08);
  EXPECT_EQ(b[23], 0x01);
  EXPECT_EQ(b[24], 0x18);
  EXPECT_EQ(b[31], 0x11);
  EXPECT_EQ(b[32], 0x21);
  EXPECT_EQ(b[39], 0x00);
  EXPECT_EQ(b[40], 0x00);  // nothing past the header
}

TEST(ExtendedHeader, LayoutFollowsTheFlatbuffersPrefix) {
  // Root offset (4 bytes) and file identifier (4) come first; the fields follow one another.
  static_assert(eh::kOffset == 8 && eh::kMagicOffset == eh::kOffset, "");
  static_assert(eh::kLengthOffset == eh::kOffset + 4 && eh::kProgramSizeOffset == eh::kOffset + 8, "");
  static_assert(eh::kSegmentDataSizeOffset + 8 == eh::kOffset + eh::kLength, "");
  static_assert(eh::kHeadBytes >= eh::kOffset + eh::kLength, "the head a reader passes holds the whole header");
}

TEST(ExtendedHeader, ReadsTheFields) {
  const auto b = head(4160, 8192, 1000);
  Result<ExtendedHeader> h = parse_extended_header(b.data(), b.size(), 9192);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->present);
  EXPECT_EQ(h->program_size, 4160u);
  EXPECT_EQ(h->segment_base_offset, 8192u);
  EXPECT_EQ(h->segment_data_size, 1000u);
}

TEST(ExtendedHeader, ALongerHeaderFromANewerWriterIsRead) {
  const auto b = head(100, 100, 0, eh::kLength + 16);
  Result<ExtendedHeader> h = parse_extended_header(b.data(), b.size(), 100);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->program_size, 100u);
}

TEST(ExtendedHeader, AbsentMeansTheWholeFileIsTheProgram) {
  auto b = head(1, 2, 3);
  b[eh::kMagicOffset] = 'x';
  for (size_t n : {b.size(), size_t{11}, size_t{0}}) {
    Result<ExtendedHeader> h = parse_extended_header(b.data(), n, 500);
    ASSERT_TRUE(h.ok()) << n;
    EXPECT_FALSE(h->present);
    EXPECT_EQ(h->program_size, 500u);
    EXPECT_EQ(h->segment_base_offset, 500u);
    EXPECT_EQ(h->segment_data_size, 0u);
  }
  EXPECT_TRUE(parse_extended_header(nullptr, 0, 0).ok());
}

struct Bad {
  std::vector<uint8_t> bytes;
  size_t head_size;
  uint64_t file_size;
  const char* log;
};

TEST(ExtendedHeader, RefusesHeadersThatDoNotFitTheFile) {
  const Bad cases[] = {
      {head(64, 64, 0), 20, 64, "the extended header needs bytes [8, 40) but only 20 were read"},
      {head(64, 64, 0, 31), 64, 64, "extended header length 31 is below the 32 bytes it must hold"},
      {head(65, 65, 0), 64, 64, "truncated: the header says the program is 65 bytes, the file has 64"},
      {head(39, 64, 0), 64, 64, "the header says the program is 39 bytes, fewer than the header itself ends at (40)"},
      {head(64, 63, 0), 64, 100, "segment base 63 lies inside the program, which ends at 64"},
      {head(64, 101, 0), 64, 100, "truncated: segment data [101, 101 + 0) does not fit the file's 100 bytes"},
      {head(64, 96, 8), 64, 100, "truncated: segment data [96, 96 + 8) does not fit the file's 100 bytes"},
      // A size that would wrap 64 bits when added to the base.
      {head(64, 96, UINT64_MAX - 50), 64, 100,
       "truncated: segment data [96, 96 + 18446744073709551565) does not fit the file's 100 bytes"},
  };
  for (const Bad& c : cases) {
    testing::clear_log();
    Result<ExtendedHeader> h = parse_extended_header(c.bytes.data(), c.head_size, c.file_size);
    ASSERT_FALSE(h.ok()) << c.log;
    EXPECT_EQ(h.error(), Error::InvalidProgram);
    EXPECT_EQ(testing::last_log(), c.log);
  }
}

}  // namespace
}  // namespace ember
