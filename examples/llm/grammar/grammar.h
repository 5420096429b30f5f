// A context-free grammar over bytes: what the GBNF parser (gbnf.h) and the JSON Schema compiler (json_schema.h)
// produce and the matcher (matcher.h) runs.
//
// Every terminal is a set of bytes, not of characters: a character class is compiled to the UTF-8 byte sequences
// of its code points (utf8_sequences below), so the matcher walks a token's bytes one at a time and a token that
// ends inside a multi-byte character is handled like any other prefix.
//
// Layout: the alternatives of every rule are runs of `elements`, each run ended by a kEnd element, so a matcher
// position is one index into `elements`. Rules are referred to by index.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember {
namespace llm {

// 256 bits: byte b is in the set when bit b is.
struct ByteSet {
  uint64_t bits[4] = {0, 0, 0, 0};
  void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool operator==(const ByteSet& o) const {
    return bits[0] == o.bits[0] && bits[1] == o.bits[1] && bits[2] == o.bits[2] && bits[3] == o.bits[3];
  }
};

struct GrammarElement {
  enum Kind : uint8_t { kEnd, kBytes, kRule };
  Kind kind;
  uint32_t arg;  // kBytes: index into Grammar::byte_sets; kRule: rule index; kEnd: the rule it ends
};

struct Grammar {
  struct Rule {
    std::string name;
    std::vector<uint32_t> alternatives;  // index of each alternative's first element
  };
  std::vector<GrammarElement> elements;
  std::vector<ByteSet> byte_sets;
  std::vector<Rule> rules;
  uint32_t root = 0;

  // The grammar as GBNF text (byte sets as classes of \xHH ranges): for error reports and debugging.
  std::string to_gbnf() const;
};

// Builds a Grammar rule by rule: each alternative a sequence of byte sets and rule references. finish() checks
// that every referenced rule is defined, that no rule is left-recursive (directly or through rules that can
// match nothing), and flattens the result.
class GrammarBuilder {
 public:
  using Sequence = std::vector<GrammarElement>;

  // The index of rule `name`, declared (not yet defined) when new.
  uint32_t rule(std::string_view name);
  // A fresh rule named after `base` ("base-1", "base-2", ...) for a group or repetition.
  uint32_t helper_rule(std::string_view base);
  bool defined(uint32_t rule) const { return rules_[rule].defined; }
  // Defines `rule` with these alternatives; false when it already was.
  bool define(uint32_t rule, std::vector<Sequence> alternatives);
  const std::string& name(uint32_t rule) const { return rules_[rule].name; }
  size_t num_rules() const { return rules_.size(); }

  GrammarElement bytes(const ByteSet& set);
  static GrammarElement ref(uint32_t rule) { return GrammarElement{GrammarElement::kRule, rule}; }

  // Appends to `seq` the elements that match one code point of `ranges` (inclusive, any order, may overlap;
  // surrogates are never matched): one byte set when all are ASCII, else a reference to a helper rule whose
  // alternatives are the UTF-8 byte sequences. `negated` matches every code point outside the ranges.
  void add_char_class(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated, std::string_view base,
                      Sequence* seq);
  // Appends the UTF-8 bytes of code point `cp` as one single-byte set each.
  void add_code_point(uint32_t cp, Sequence* seq);

  // The elements written so far, for bounding hostile input.
  size_t size() const { return total_elements_; }

  // Checks and flattens; on failure `error` says which rule and why.
  bool finish(std::string_view root, Grammar* out, std::string* error);

 private:
  struct PendingRule {
    std::string name;
    bool defined = false;
    std::vector<Sequence> alternatives;
  };
  std::vector<PendingRule> rules_;
  std::vector<ByteSet> byte_sets_;
  std::unordered_map<std::string, uint32_t> names_;
  std::map<std::array<uint64_t, 4>, uint32_t> set_index_;
  size_t total_elements_ = 0;
  size_t helpers_ = 0;
};

// The UTF-8 encodings of code points lo..hi as sequences of byte ranges ([first byte range, second, ...]); every
// code point of the range, and nothing else, is matched by exactly one sequence. Surrogates (U+D800..U+DFFF) are
// left out.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out);

// Bytes of the UTF-8 encoding of cp (1 to 4) into buf; 0 when cp is not a Unicode scalar value.
size_t encode_utf8(uint32_t cp, uint8_t buf[4]);

}  // namespace llm
}  // namespace ember
