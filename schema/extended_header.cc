#include "schema/extended_header.h"

#include <string.h>

#include "runtime/core/log.h"

namespace ember {

namespace {

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t read_u64(const uint8_t* p) {
  return static_cast<uint64_t>(read_u32(p)) | static_cast<uint64_t>(read_u32(p + 4)) << 32;
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void put_u64(uint8_t* p, uint64_t v) {
  put_u32(p, static_cast<uint32_t>(v));
  put_u32(p + 4, static_cast<uint32_t>(v >> 32));
}

using ull = unsigned long long;

}  // namespace

Result<ExtendedHeader> parse_extended_header(const uint8_t* head, size_t head_size, uint64_t file_size) {
  namespace eh = extended_header;
  ExtendedHeader out;
  out.program_size = file_size;
  out.segment_base_offset = file_size;
  if (head == nullptr || head_size < eh::kOffset + sizeof(eh::kMagic) ||
      memcmp(head + eh::kMagicOffset, eh::kMagic, sizeof(eh::kMagic)) != 0) {
    return out;
  }
  EMBER_CHECK_OR_RETURN_ERROR(head_size >= eh::kOffset + eh::kLength, InvalidProgram,
                              "the extended header needs bytes [%u, %u) but only %llu were read",
                              static_cast<unsigned>(eh::kOffset), static_cast<unsigned>(eh::kOffset + eh::kLength),
                              static_cast<ull>(head_size));
  const uint32_t length = read_u32(head + eh::kLengthOffset);
  EMBER_CHECK_OR_RETURN_ERROR(length >= eh::kLength, InvalidProgram,
                              "extended header length %u is below the %u bytes it must hold",
                              static_cast<unsigned>(length), static_cast<unsigned>(eh::kLength));
  out.present = true;
  out.program_size = read_u64(head + eh::kProgramSizeOffset);
  out.segment_base_offset = read_u64(head + eh::kSegmentBaseOffsetOffset);
  out.segment_data_size = read_u64(head + eh::kSegmentDataSizeOffset);
  EMBER_CHECK_OR_RETURN_ERROR(out.program_size <= file_size, InvalidProgram,
                              "truncated: the header says the program is %llu bytes, the file has %llu",
                              static_cast<ull>(out.program_size), static_cast<ull>(file_size));
  EMBER_CHECK_OR_RETURN_ERROR(out.program_size >= eh::kOffset + eh::kLength, InvalidProgram,
                              "the header says the program is %llu bytes, fewer than the header itself ends at (%u)",
                              static_cast<ull>(out.program_size), static_cast<unsigned>(eh::kOffset + eh::kLength));
  EMBER_CHECK_OR_RETURN_ERROR(out.segment_base_offset >= out.program_size, InvalidProgram,
                              "segment base %llu lies inside the program, which ends at %llu",
                              static_cast<ull>(out.segment_base_offset), static_cast<ull>(out.program_size));
  // No sum that could wrap: both values are checked against file_size on their own first.
  EMBER_CHECK_OR_RETURN_ERROR(out.segment_base_offset <= file_size &&
                                  out.segment_data_size <= file_size - out.segment_base_offset,
                              InvalidProgram,
                              "truncated: segment data [%llu, %llu + %llu) does not fit the file's %llu bytes",
                              static_cast<ull>(out.segment_base_offset), static_cast<ull>(out.segment_base_offset),
                              static_cast<ull>(out.segment_data_size), static_cast<ull>(file_size));
  return out;
}

void write_extended_header(const ExtendedHeader& header, uint8_t* file_head) {
  namespace eh = extended_header;
  memcpy(file_head + eh::kMagicOffset, eh::kMagic, sizeof(eh::kMagic));
  put_u32(file_head + eh::kLengthOffset, static_cast<uint32_t>(eh::kLength));
  put_u64(file_head + eh::kProgramSizeOffset, header.program_size);
  put_u64(file_head + eh::kSegmentBaseOffsetOffset, header.segment_base_offset);
  put_u64(file_head + eh::kSegmentDataSizeOffset, header.segment_data_size);
}

}  // namespace ember
