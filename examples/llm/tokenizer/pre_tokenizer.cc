#include "examples/llm/tokenizer/pre_tokenizer.h"

#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace {

constexpr const char* kGpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
constexpr const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

bool is_space(uint32_t cp) { return is_whitespace(cp); }
bool is_other(uint32_t cp) { return !is_whitespace(cp) && !is_letter(cp) && !is_number(cp); }
bool is_newline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// Code points equal to `lower` under Unicode simple case folding, for the contraction letters: the long s (U+017F)
// folds to 's', and Oniguruma's (?i) honours that; no other letter of "strevmld" has a non-ASCII fold.
bool folds_to(uint32_t cp, char lower) {
  if (cp == static_cast<uint32_t>(lower) || cp == static_cast<uint32_t>(lower - 'a' + 'A')) return true;
  return lower == 's' && cp == 0x17F;
}

class Matcher {
 public:
  Matcher(const std::vector<Char>& chars) : c_(chars), n_(chars.size()) {}

  uint32_t at(size_t i) const { return i < n_ ? c_[i].cp : kInvalidCodePoint; }
  bool valid(size_t i) const { return i < n_; }

  // End (exclusive) of the run of characters satisfying pred starting at i (i itself when none).
  template <typename Pred>
  size_t run(size_t i, Pred pred) const {
    while (i < n_ && pred(c_[i].cp)) ++i;
    return i;
  }

  // 's|'t|'re|'ve|'m|'ll|'d at i, case-insensitively when `fold`; end of the match, or 0 when none.
  size_t contraction(size_t i, bool fold) const {
    if (at(i) != '\'' || !valid(i + 1)) return 0;
    const uint32_t a = at(i + 1);
    auto eq = [fold](uint32_t cp, char lower) {
      return fold ? folds_to(cp, lower) : cp == static_cast<uint32_t>(lower);
    };
    if (eq(a, 's') || eq(a, 't') || eq(a, 'm') || eq(a, 'd')) return i + 2;
    if (valid(i + 2)) {
      const uint32_t b = at(i + 2);
      if ((eq(a, 'r') && eq(b, 'e')) || (eq(a, 'v') && eq(b, 'e')) || (eq(a, 'l') && eq(b, 'l'))) return i + 3;
    }
    return 0;
  }

  // " ?X+" at i for the class X; end of the match, or 0 when none.
  template <typename Pred>
  size_t optional_space_then_run(size_t i, Pred pred) const {
    size_t j = i;
    if (at(j) == ' ' && valid(j + 1) && pred(at(j + 1))) ++j;
    if (!valid(j) || !pred(at(j))) return 0;
    return run(j, pred);
  }

  // \s+(?!\S) at i, then \s+: the whitespace run, less its last character when a non-space follows it and the
  // run is longer than one; end of the match, or 0 when i is not a space.
  size_t whitespace(size_t i) const {
    if (!valid(i) || !is_space(at(i))) return 0;
    const size_t j = run(i, is_space);
    if (j < n_ && j - i > 1) return j - 1;
    return j;
  }

  size_t gpt2(size_t i) const {
    if (size_t e = contraction(i, false)) return e;
    if (size_t e = optional_space_then_run(i, is_letter)) return e;
    if (size_t e = optional_space_then_run(i, is_number)) return e;
    if (size_t e = optional_space_then_run(i, is_other)) return e;
    if (size_t e = whitespace(i)) return e;
    return i + 1;  // unreachable: every character is a letter, number, space or other
  }

  size_t llama3(size_t i, size_t max_digits) const {
    if (size_t e = contraction(i, true)) return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    {
      size_t j = i;
      const uint32_t c = at(j);
      if (valid(j) && !is_newline(c) && !is_letter(c) && !is_number(c) && is_letter(at(j + 1))) ++j;
      if (is_letter(at(j))) return run(j, is_letter);
    }
    // \p{N}{1,max}
    if (is_number(at(i))) {
      size_t j = i;
      while (j < n_ && j - i < max_digits && is_number(c_[j].cp)) ++j;
      return j;
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n]*"
    if (size_t e = optional_space_then_run(i, is_other)) return run(e, is_newline);
    // \s*[\r\n]+: the whitespace run up to and including its last \r or \n.
    if (is_space(at(i))) {
      const size_t j = run(i, is_space);
      for (size_t k = j; k > i; --k) {
        if (is_newline(c_[k - 1].cp)) return k;
      }
    }
    if (size_t e = whitespace(i)) return e;
    return i + 1;
  }

 private:
  const std::vector<Char>& c_;
  size_t n_;
};

}  // namespace

bool split_pattern_from_regex(std::string_view regex, SplitPattern* pattern) {
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kLlama3, SplitPattern::kQwen2}) {
    if (regex == split_pattern_regex(p)) {
      *pattern = p;
      return true;
    }
  }
  return false;
}

const char* split_pattern_regex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2: return kGpt2Regex;
    case SplitPattern::kLlama3: return kLlama3Regex;
    case SplitPattern::kQwen2: return kQwen2Regex;
  }
  return "";
}

std::vector<ByteRange> split_text(std::string_view text, SplitPattern pattern) {
  const std::vector<Char> chars = split_chars(text);
  const Matcher m(chars);
  std::vector<ByteRange> pieces;
  size_t i = 0;
  while (i < chars.size()) {
    size_t e;
    switch (pattern) {
      case SplitPattern::kGpt2: e = m.gpt2(i); break;
      case SplitPattern::kLlama3: e = m.llama3(i, 3); break;
      default: e = m.llama3(i, 1); break;
    }
    const size_t begin = chars[i].offset;
    const size_t end = e < chars.size() ? chars[e].offset : text.size();
    pieces.emplace_back(begin, end);
    i = e;
  }
  return pieces;
}

}  // namespace llm
}  // namespace ember
