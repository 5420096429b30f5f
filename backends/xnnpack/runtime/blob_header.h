// The framing of an XnnpackBackend blob: where its XNNGraph flatbuffer and its constant data are.
//
// ExecuTorch's writer puts a 30-byte little-endian header "XH00" first (4 zero bytes, the magic at bytes 4..8 where
// a bare flatbuffer keeps its identifier, u16 header length, u32 flatbuffer offset, u32 flatbuffer size, u32
// constant-data offset, u64 constant-data size), each part padded to 16 bytes. Older blobs are a bare flatbuffer.
// Both are read here; every offset and size is checked against the blob before anything is used.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/result.h"

namespace ember {
namespace xnnpack {

struct BlobParts {
  const uint8_t* flatbuffer;  // starts with a root offset; its identifier ("XN00" or "XN01") at bytes 4..8
  size_t flatbuffer_size;
  size_t flatbuffer_offset;      // in the blob, for messages
  const uint8_t* constant_data;  // what ConstantDataOffset offsets are relative to; null without a header
  uint64_t constant_data_size;
  uint64_t constant_data_offset;  // in the blob, for messages
  bool has_header;
  char identifier[5];  // the flatbuffer's, NUL-terminated
};

constexpr size_t kHeaderMinLength = 30;

// Splits `blob` (nbytes long) into its parts, or InvalidProgram with a message naming the field and byte counts at
// fault: too short, a header whose offsets point outside the blob (naming the header's bytes that hold them), or a
// flatbuffer identifier that is neither XN00 nor XN01 (the wrong magic and its byte offset are printed).
Result<BlobParts> split_blob(const void* blob, size_t nbytes);

}  // namespace xnnpack
}  // namespace ember
