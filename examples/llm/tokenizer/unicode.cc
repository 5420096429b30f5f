#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace {

struct Range {
  uint32_t first;
  uint32_t last;
  uint8_t cls;  // 1 letter, 2 decimal or letter number, 3 other number, 4 mark or connector punctuation
};

constexpr Range kRanges[] = {
#include "examples/llm/tokenizer/unicode_table.inc"
};

// 0 anything else, or a class of kRanges.
int char_class(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return 1;
    if (cp == '_') return 4;
    return cp >= '0' && cp <= '9' ? 2 : 0;
  }
  size_t lo = 0, hi = sizeof(kRanges) / sizeof(kRanges[0]);
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (kRanges[mid].last < cp) {
      lo = mid + 1;
    } else if (kRanges[mid].first > cp) {
      hi = mid;
    } else {
      return kRanges[mid].cls;
    }
  }
  return 0;
}

}  // namespace

size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

uint32_t decode_utf8(std::string_view text, size_t* length) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  *length = 1;
  if (s[0] < 0x80) return s[0];
  size_t n;
  uint32_t cp;
  uint32_t min;
  if ((s[0] & 0xE0) == 0xC0) {
    n = 2, cp = s[0] & 0x1F, min = 0x80;
  } else if ((s[0] & 0xF0) == 0xE0) {
    n = 3, cp = s[0] & 0x0F, min = 0x800;
  } else if ((s[0] & 0xF8) == 0xF0) {
    n = 4, cp = s[0] & 0x07, min = 0x10000;
  } else {
    return kInvalidCodePoint;
  }
  if (text.size() < n) return kInvalidCodePoint;
  for (size_t i = 1; i < n; ++i) {
    if ((s[i] & 0xC0) != 0x80) return kInvalidCodePoint;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return kInvalidCodePoint;
  *length = n;
  return cp;
}

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::vector<Char> split_chars(std::string_view text) {
  std::vector<Char> chars;
  chars.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n;
    const uint32_t cp = decode_utf8(text.substr(pos), &n);
    chars.push_back(Char{cp, static_cast<uint32_t>(pos), static_cast<uint32_t>(n)});
    pos += n;
  }
  return chars;
}

bool is_letter(uint32_t cp) { return cp != kInvalidCodePoint && char_class(cp) == 1; }
bool is_number(uint32_t cp) {
  if (cp == kInvalidCodePoint) return false;
  const int c = char_class(cp);
  return c == 2 || c == 3;
}

bool is_word_char(uint32_t cp) {
  if (cp == kInvalidCodePoint) return false;
  const int c = char_class(cp);
  return c == 1 || c == 2 || c == 4 || cp == 0x200C || cp == 0x200D;
}

bool is_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace llm
}  // namespace ember
