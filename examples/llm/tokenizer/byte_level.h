// GPT-2's byte-level alphabet: each of the 256 byte values stands for one printable code point, so that any byte
// string is a text the BPE vocabulary can spell. Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves;
// the 68 others (controls, space, 0x7F..0xA0, 0xAD) for U+0100 onwards, in byte order.
#pragma once

#include <stdint.h>

#include <string>
#include <string_view>

namespace ember {
namespace llm {

// The code point byte `b` stands for.
uint32_t byte_to_code_point(uint8_t b);

// The byte code point `cp` stands for, or -1 when it stands for none.
int code_point_to_byte(uint32_t cp);

// `bytes` spelled in the byte-level alphabet (UTF-8).
std::string bytes_to_byte_level(std::string_view bytes);

// The bytes a byte-level text spells; false when a character of it is outside the alphabet (or not UTF-8).
bool byte_level_to_bytes(std::string_view text, std::string* bytes);

}  // namespace llm
}  // namespace ember
