// A small, fixed vocabulary for the grammar fuzz targets: no model or tokenizer file, the same tokens on every run.
// It has what real vocabularies put in front of a grammar: every single byte (byte-fallback tokens, so any text
// can be spelled), multi-byte pieces of JSON and words, whole and split UTF-8 characters, and special tokens with
// no bytes (never allowed) besides the end-of-sequence token.
#pragma once

#include <string>
#include <vector>

#include "examples/llm/grammar/token_mask.h"

namespace ember {
namespace fuzz {

inline const llm::TokenVocabulary& fuzz_vocabulary() {
  static const llm::TokenVocabulary* vocab = [] {
    // Id 0 the end of sequence, 1 and 2 other special tokens: all empty, as from_tokenizer makes them.
    std::vector<std::string> tokens = {"", "", ""};
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    const char* pieces[] = {"{\"",  "\":",      "\",",      "\",\"", "\"}",   "\"]",   "}}",     "]]",    "{}",
                            "[]",   "[{",       "}]",       "\":\"", "\":{",  "\":[",  "true",   "false", "null",
                            "tr",   "ue",       "nu",       "fal",   "\\\"",  "\\\\",  "\\n",    "\\u",   "\\u00",
                            "00e9", "12",       "123",      "0.",    ".5",    "-1",    "-0",     "e+",    "E-",
                            "1e5",  "99",       "1000",     "name",  "age",   "tags",  "x",      "ok",    " the",
                            "the",  " a",       "a",        "ab",    "abc",   "hello", " world", "  ",    "\n",
                            "\n\n", "\t",       ", ",       ",",     ":",     "::=",   "é",      "ü",     "ß",
                            "中",   "文",       "👋",       "🙂",    "Grüße", " é",    "\xc3",   "\xa9",  "\xe4\xb8",
                            "\xad", "\xf0\x9f", "\x98\x80", "é\"",   "\"é",   "a\"",   "\"a",    "+",     "-",
                            "(",    ")",        "*",        "|"};
    for (const char* p : pieces) tokens.push_back(p);
    return new llm::TokenVocabulary(tokens, {0});
  }();
  return *vocab;
}

}  // namespace fuzz
}  // namespace ember
