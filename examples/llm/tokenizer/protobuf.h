// Protocol Buffers wire format, read by hand: enough to walk a message's fields (varint, 64-bit, length-delimited,
// 32-bit) without the protobuf library or a schema. Every length and varint is bounds-checked; a truncated or
// malformed message gives Error::InvalidArgument with a message naming the message, the field number, its wire type
// and the byte offset in the file (refusal.h: into the caller's string, or the log).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/result.h"

namespace ember {
namespace llm {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct ProtoField {
  uint32_t number;
  WireType type;
  size_t offset;           // of the field's key, in bytes from the start of the file
  size_t value_offset;     // of its value (for kLengthDelimited, of `bytes`)
  uint64_t value;          // kVarint, kFixed64, kFixed32 (the raw bits)
  std::string_view bytes;  // kLengthDelimited: a string, bytes, a packed array or a nested message

  float as_float() const;  // kFixed32 bits as an IEEE float
  int32_t as_int32() const { return static_cast<int32_t>(static_cast<uint32_t>(value)); }
  bool as_bool() const { return value != 0; }
};

// The wire type's name for messages: "varint", "64-bit", "length-delimited", "32-bit", or "invalid".
const char* wire_type_name(uint32_t wire);

// The fields of `message`, in order. `name` is for error messages ("ModelProto.trainer_spec"); `base` is where
// `message` starts in the file (a nested message's value_offset), so offsets are the file's; a refusal goes to
// `*why` when given, to the log otherwise.
Result<std::vector<ProtoField>> parse_proto(std::string_view message, const char* name, std::string* why = nullptr,
                                            size_t base = 0);

}  // namespace llm
}  // namespace ember
