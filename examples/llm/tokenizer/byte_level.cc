#include "examples/llm/tokenizer/byte_level.h"

#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace {

bool stands_for_itself(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  uint32_t to_cp[256];
  int16_t from_cp[0x144];  // every code point of the alphabet is below U+0144
  Tables() {
    for (auto& v : from_cp) v = -1;
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      to_cp[b] = stands_for_itself(b) ? b : next++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t b) { return tables().to_cp[b]; }

int code_point_to_byte(uint32_t cp) {
  return cp < sizeof(Tables::from_cp) / sizeof(int16_t) ? tables().from_cp[cp] : -1;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(&out, byte_to_code_point(static_cast<uint8_t>(c)));
  return out;
}

bool byte_level_to_bytes(std::string_view text, std::string* bytes) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n;
    const uint32_t cp = decode_utf8(text.substr(pos), &n);
    const int b = cp == kInvalidCodePoint ? -1 : code_point_to_byte(cp);
    if (b < 0) return false;
    bytes->push_back(static_cast<char>(b));
    pos += n;
  }
  return true;
}

}  // namespace llm
}  // namespace ember
