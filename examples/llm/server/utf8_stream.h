// Turns the bytes of generated tokens into text that can be sent as it comes: a token may end in the middle of a
// UTF-8 character that the next one completes, and a model (random weights most of all) may produce bytes that are
// not UTF-8 at all. A streamed delta must be whole characters of valid UTF-8 (it goes into a JSON string), so the
// stream holds back an incomplete character until its last byte arrives and writes one U+FFFD for each byte that
// begins no character and for each character an invalid byte cuts short, as Python's and the WHATWG decoders do.
#pragma once

#include <string>
#include <string_view>

namespace ember {
namespace llm {
namespace server {

class Utf8Stream {
 public:
  // The text `bytes` completes: every whole character so far, invalid bytes replaced. An incomplete character at
  // the end is kept for the next push.
  std::string push(std::string_view bytes);
  // What is still held (an incomplete character at the end of generation), as one U+FFFD.
  std::string finish();

 private:
  std::string pending_;
};

// How many bytes the character starting with `lead` takes (1 to 4), or 0 when `lead` cannot start one.
int utf8_length(unsigned char lead);

// Whether `c` may follow `lead` as its character's second byte (the ranges that exclude overlong forms,
// surrogates and code points past U+10FFFF); later bytes only need to be continuation bytes.
bool utf8_second_byte_ok(unsigned char lead, unsigned char c);

}  // namespace server
}  // namespace llm
}  // namespace ember
