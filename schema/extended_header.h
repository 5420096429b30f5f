// The .pte extended header ("eh00" at byte 8), read with the layout schema/extended_header.yaml defines (generated
// into schema/extended_header_layout.h), so the runtime and exir/serialize cannot disagree on an offset.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/result.h"
#include "schema/extended_header_layout.h"

namespace ember {

struct ExtendedHeader {
  bool present = false;  // false: the file has no header; all of it is the program, with no segments
  uint64_t program_size = 0;         // bytes of the flatbuffer part, the header included
  uint64_t segment_base_offset = 0;  // where segment data starts
  uint64_t segment_data_size = 0;    // bytes of segment data
};

// Reads the header from `head`, the first `head_size` bytes of a .pte of `file_size` bytes (callers pass
// min(file_size, extended_header::kHeadBytes)), and checks it against the file: the program must fit in the file
// and the segment data lie after the program and inside the file. Without a header (no magic at byte 8) the whole
// file is the program and the segment data is empty, at its end. InvalidProgram, logging the numbers at fault,
// for a header that is too short or does not fit the file.
Result<ExtendedHeader> parse_extended_header(const uint8_t* head, size_t head_size, uint64_t file_size);

// Writes the header into bytes [kOffset, kOffset + kLength) of `file_head` (the first bytes of a .pte, which the
// caller sized), magic and length included: for tools and tests that build .pte files in C++.
void write_extended_header(const ExtendedHeader& header, uint8_t* file_head);

}  // namespace ember
