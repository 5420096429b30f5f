// The split patterns of byte-level BPE tokenizers, written out by hand (no regex engine): each function returns
// the pieces, as [begin, end) byte ranges of `text`, that the pattern's successive leftmost matches cover, as the
// tokenizers library's Split(pattern, behavior="isolated") and ByteLevel(use_regex=true) produce them.
#pragma once

#include <stddef.h>

#include <string_view>
#include <utility>
#include <vector>

namespace ember {
namespace llm {

enum class SplitPattern {
  // GPT-2 (and ByteLevel(use_regex=true)):
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // Llama-3 (tiktoken's cl100k_base pattern):
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kLlama3,
  // Qwen2: Llama-3's with \p{N} (one digit per piece) instead of \p{N}{1,3}.
  kQwen2,
};

// The pattern whose regex text (as written in a tokenizer.json) is `regex`; false when it is none of the above.
bool split_pattern_from_regex(std::string_view regex, SplitPattern* pattern);

// The regex text of `pattern`, as the tokenizers library writes it.
const char* split_pattern_regex(SplitPattern pattern);

using ByteRange = std::pair<size_t, size_t>;

// Splits `text` (UTF-8; malformed bytes count as punctuation) into the pieces matched by `pattern`. Every byte
// of `text` is in exactly one piece, in order.
std::vector<ByteRange> split_text(std::string_view text, SplitPattern pattern);

}  // namespace llm
}  // namespace ember
