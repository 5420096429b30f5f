#include "examples/llm/tokenizer/protobuf.h"

#include <string.h>

namespace ember {
namespace llm {

float ProtoField::as_float() const {
  const uint32_t bits = static_cast<uint32_t>(value);
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

namespace {

// Reads a varint at data[*pos], advancing *pos; false when it runs past the end or over 10 bytes.
bool read_varint(std::string_view data, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= data.size()) return false;
    const uint8_t b = static_cast<uint8_t>(data[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

uint64_t read_le(std::string_view data, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data[pos + i])) << (8 * i);
  return v;
}

}  // namespace

Result<std::vector<ProtoField>> parse_proto(std::string_view message, const char* name) {
  std::vector<ProtoField> fields;
  size_t pos = 0;
  while (pos < message.size()) {
    const size_t start = pos;
    uint64_t key;
    EMBER_CHECK_OR_RETURN_ERROR(read_varint(message, &pos, &key), InvalidArgument,
                                "protobuf %s: truncated field key at byte %zu of %zu", name, start, message.size());
    ProtoField f{};
    f.number = static_cast<uint32_t>(key >> 3);
    EMBER_CHECK_OR_RETURN_ERROR(f.number != 0 && (key >> 3) <= 0x1FFFFFFF, InvalidArgument,
                                "protobuf %s: invalid field number %llu at byte %zu", name,
                                static_cast<unsigned long long>(key >> 3), start);
    const uint32_t wire = static_cast<uint32_t>(key & 7);
    switch (wire) {
      case 0: {
        f.type = WireType::kVarint;
        const size_t value_start = pos;
        EMBER_CHECK_OR_RETURN_ERROR(read_varint(message, &pos, &f.value), InvalidArgument,
                                    "protobuf %s: field %u: truncated varint at byte %zu of %zu", name, f.number,
                                    value_start, message.size());
        break;
      }
      case 1:
      case 5: {
        const size_t n = wire == 1 ? 8 : 4;
        f.type = wire == 1 ? WireType::kFixed64 : WireType::kFixed32;
        EMBER_CHECK_OR_RETURN_ERROR(message.size() - pos >= n, InvalidArgument,
                                    "protobuf %s: field %u: %zu-byte value truncated at byte %zu of %zu", name,
                                    f.number, n, pos, message.size());
        f.value = read_le(message, pos, n);
        pos += n;
        break;
      }
      case 2: {
        f.type = WireType::kLengthDelimited;
        uint64_t length;
        EMBER_CHECK_OR_RETURN_ERROR(read_varint(message, &pos, &length), InvalidArgument,
                                    "protobuf %s: field %u: truncated length at byte %zu of %zu", name, f.number, pos,
                                    message.size());
        EMBER_CHECK_OR_RETURN_ERROR(length <= message.size() - pos, InvalidArgument,
                                    "protobuf %s: field %u: length %llu at byte %zu runs past the end (%zu bytes left)",
                                    name, f.number, static_cast<unsigned long long>(length), start,
                                    message.size() - pos);
        f.bytes = message.substr(pos, static_cast<size_t>(length));
        pos += static_cast<size_t>(length);
        break;
      }
      default:
        EMBER_LOG(ERROR, "protobuf %s: field %u: wire type %u at byte %zu is not supported (groups or invalid)", name,
                  f.number, wire, start);
        return Error::InvalidArgument;
    }
    fields.push_back(f);
  }
  return fields;
}

}  // namespace llm
}  // namespace ember
