#include "examples/llm/server/utf8_stream.h"

namespace ember {
namespace llm {
namespace server {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// How many bytes at `text[i]` begin a valid character: its whole length when complete (*complete true), fewer
// when the text ends inside it or an invalid byte cuts it short (0 when the byte at i begins none).
size_t valid_prefix(std::string_view text, size_t i, bool* complete) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  const int length = utf8_length(lead);
  *complete = false;
  if (length == 0) return 0;
  for (int k = 1; k < length; ++k) {
    if (i + k >= text.size()) return static_cast<size_t>(k);
    const unsigned char c = static_cast<unsigned char>(text[i + k]);
    const bool ok = k == 1 ? utf8_second_byte_ok(lead, c) : is_continuation(c);
    if (!ok) return static_cast<size_t>(k);
  }
  *complete = true;
  return static_cast<size_t>(length);
}

}  // namespace

int utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // a continuation byte, an overlong lead (C0, C1) or past U+10FFFF (F5-FF)
}

bool utf8_second_byte_ok(unsigned char lead, unsigned char c) {
  switch (lead) {
    case 0xE0: return c >= 0xA0 && c <= 0xBF;  // below: overlong
    case 0xED: return c >= 0x80 && c <= 0x9F;  // above: UTF-16 surrogates
    case 0xF0: return c >= 0x90 && c <= 0xBF;  // below: overlong
    case 0xF4: return c >= 0x80 && c <= 0x8F;  // above: past U+10FFFF
    default: return is_continuation(c);
  }
}

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes.data(), bytes.size());
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    bool complete = false;
    const size_t n = valid_prefix(pending_, i, &complete);
    if (complete) {
      out.append(pending_, i, n);
      i += n;
    } else if (n > 0 && i + n == pending_.size()) {
      break;  // the rest may be completed by the next token
    } else {
      // One U+FFFD for a byte that begins no character, or for the valid beginning of one that an invalid byte
      // cut short (the maximal subpart, as Python's and the WHATWG decoders replace it).
      out += kReplacement;
      i += n > 0 ? n : 1;
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Stream::finish() {
  std::string out = pending_.empty() ? std::string() : std::string(kReplacement);  // an unfinished character
  pending_.clear();
  return out;
}

}  // namespace server
}  // namespace llm
}  // namespace ember
