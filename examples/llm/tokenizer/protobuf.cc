#include "examples/llm/tokenizer/protobuf.h"

#include <string.h>

#include "examples/llm/tokenizer/refusal.h"

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

const char* wire_type_name(uint32_t wire) {
  switch (wire) {
    case 0: return "varint";
    case 1: return "64-bit";
    case 2: return "length-delimited";
    case 5: return "32-bit";
    default: return "invalid";
  }
}

Result<std::vector<ProtoField>> parse_proto(std::string_view message, const char* name, std::string* why, size_t base) {
  std::vector<ProtoField> fields;
  const size_t end = base + message.size();  // in file offsets, for messages
  size_t pos = 0;
  while (pos < message.size()) {
    const size_t start = pos;
    uint64_t key;
    EMBER_REFUSE_UNLESS(why, read_varint(message, &pos, &key), InvalidArgument,
                        "protobuf %s: field key at byte %zu is truncated (the message ends at byte %zu)", name,
                        base + start, end);
    ProtoField f{};
    f.number = static_cast<uint32_t>(key >> 3);
    f.offset = base + start;
    const uint32_t wire = static_cast<uint32_t>(key & 7);
    EMBER_REFUSE_UNLESS(why, f.number != 0 && (key >> 3) <= 0x1FFFFFFF, InvalidArgument,
                        "protobuf %s: field number %llu (wire type %u) at byte %zu is outside [1, 2^29)", name,
                        static_cast<unsigned long long>(key >> 3), wire, f.offset);
    f.value_offset = base + pos;
    switch (wire) {
      case 0: {
        f.type = WireType::kVarint;
        EMBER_REFUSE_UNLESS(why, read_varint(message, &pos, &f.value), InvalidArgument,
                            "protobuf %s: field %u (wire type 0, varint) at byte %zu: the value is truncated or over "
                            "10 bytes (the message ends at byte %zu)",
                            name, f.number, f.offset, end);
        break;
      }
      case 1:
      case 5: {
        const size_t n = wire == 1 ? 8 : 4;
        f.type = wire == 1 ? WireType::kFixed64 : WireType::kFixed32;
        EMBER_REFUSE_UNLESS(why, message.size() - pos >= n, InvalidArgument,
                            "protobuf %s: field %u (wire type %u, %s) at byte %zu: the %zu-byte value is truncated "
                            "(%zu bytes left)",
                            name, f.number, wire, wire_type_name(wire), f.offset, n, message.size() - pos);
        f.value = read_le(message, pos, n);
        pos += n;
        break;
      }
      case 2: {
        f.type = WireType::kLengthDelimited;
        uint64_t length;
        EMBER_REFUSE_UNLESS(why, read_varint(message, &pos, &length), InvalidArgument,
                            "protobuf %s: field %u (wire type 2, length-delimited) at byte %zu: the length is "
                            "truncated (the message ends at byte %zu)",
                            name, f.number, f.offset, end);
        EMBER_REFUSE_UNLESS(why, length <= message.size() - pos, InvalidArgument,
                            "protobuf %s: field %u (wire type 2, length-delimited) at byte %zu: length %llu runs past "
                            "the end (%zu bytes left)",
                            name, f.number, f.offset, static_cast<unsigned long long>(length), message.size() - pos);
        f.value_offset = base + pos;
        f.bytes = message.substr(pos, static_cast<size_t>(length));
        pos += static_cast<size_t>(length);
        break;
      }
      default:
        return refuse(why, Error::InvalidArgument,
                      "protobuf %s: field %u at byte %zu has wire type %u, which is not supported (groups or invalid)",
                      name, f.number, f.offset, wire);
    }
    fields.push_back(f);
  }
  return fields;
}

}  // namespace llm
}  // namespace ember
