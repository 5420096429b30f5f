// UTF-8 and the few Unicode properties the tokenizers need: letter (\p{L}), number (\p{N}) and white space (\s),
// answered from a range table generated from Python's unicodedata (gen_unicode_table.py), with no library.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <string_view>
#include <vector>

namespace ember {
namespace llm {

// What decode_utf8 reports for a byte that does not start a well-formed sequence (it consumes that one byte).
// Not a code point: it is neither letter, number nor space, so the pre-tokenizers treat it as punctuation.
constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;

// The code point at the start of `text` (which must not be empty) and, in *length, how many bytes it takes.
// Overlong forms, surrogates, values above U+10FFFF and truncated sequences give kInvalidCodePoint, length 1.
uint32_t decode_utf8(std::string_view text, size_t* length);

// Appends the UTF-8 form of `cp` (which must be at most U+10FFFF).
void append_utf8(std::string* out, uint32_t cp);

// A character of a text: its code point and where its bytes are.
struct Char {
  uint32_t cp;
  uint32_t offset;
  uint32_t length;
};

// The characters of `text`, in order; malformed bytes become one kInvalidCodePoint character each.
std::vector<Char> split_chars(std::string_view text);

bool is_letter(uint32_t cp);      // general category L*
bool is_number(uint32_t cp);      // general category N*
bool is_whitespace(uint32_t cp);  // Unicode White_Space, what \s matches in the tokenizers' regex engine
// What a Unicode regex \w matches, approximately: letters, marks, decimal and letter numbers, connector punctuation
// and the joiners (Unicode's Other_Alphabetic symbols, such as circled letters, are left out).
bool is_word_char(uint32_t cp);

// How many bytes the UTF-8 sequence whose first byte is `lead` takes (1 for a continuation or invalid byte).
size_t utf8_sequence_length(uint8_t lead);

}  // namespace llm
}  // namespace ember
