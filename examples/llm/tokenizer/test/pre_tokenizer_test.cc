// The hand-written split patterns on cases that tell their alternatives apart (the parity test compares them with
// the reference on every code point and thousands of strings).
#include "examples/llm/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ember {
namespace llm {
namespace {

std::vector<std::string> pieces(const std::string& text, SplitPattern p) {
  std::vector<std::string> out;
  for (const auto& r : split_text(text, p)) out.push_back(text.substr(r.first, r.second - r.first));
  return out;
}

using V = std::vector<std::string>;

TEST(SplitGpt2, ContractionsLettersNumbersPunctuationSpaces) {
  EXPECT_EQ(pieces("Hello world's 123 !!x", SplitPattern::kGpt2), (V{"Hello", " world", "'s", " 123", " !!", "x"}));
  EXPECT_EQ(pieces("a   b", SplitPattern::kGpt2), (V{"a", "  ", " b"}));  // \s+(?!\S) leaves the last space
  EXPECT_EQ(pieces("a \n", SplitPattern::kGpt2), (V{"a", " \n"}));
  EXPECT_EQ(pieces("DON'T", SplitPattern::kGpt2), (V{"DON", "'", "T"}));  // case-sensitive contractions
  EXPECT_EQ(pieces("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC", SplitPattern::kGpt2),
            (V{"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"}));
  EXPECT_EQ(pieces("", SplitPattern::kGpt2), V{});
}

TEST(SplitLlama3, DigitGroupsNewlinesAndCaseInsensitiveContractions) {
  EXPECT_EQ(pieces("1234567", SplitPattern::kLlama3), (V{"123", "456", "7"}));
  EXPECT_EQ(pieces("1234567", SplitPattern::kQwen2), (V{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(pieces("DON'T", SplitPattern::kLlama3), (V{"DON", "'T"}));
  EXPECT_EQ(pieces("x\n\n  y", SplitPattern::kLlama3), (V{"x", "\n\n", " ", " y"}));
  EXPECT_EQ(pieces("(hello)\n", SplitPattern::kLlama3), (V{"(hello", ")\n"}));
  EXPECT_EQ(pieces("\thi", SplitPattern::kLlama3), (V{"\thi"}));  // any non-letter, non-newline prefix
  EXPECT_EQ(pieces("a  \t", SplitPattern::kLlama3), (V{"a", "  \t"}));
}

TEST(SplitPatterns, MalformedUtf8IsPunctuationAndEveryByteIsKept) {
  const std::string text = "ab\xFF\xFE cd";
  EXPECT_EQ(pieces(text, SplitPattern::kGpt2), (V{"ab", "\xFF\xFE", " cd"}));
}

TEST(SplitPatterns, RecognisedByTheirRegexText) {
  SplitPattern p;
  EXPECT_TRUE(split_pattern_from_regex(split_pattern_regex(SplitPattern::kLlama3), &p));
  EXPECT_EQ(p, SplitPattern::kLlama3);
  EXPECT_FALSE(split_pattern_from_regex("\\w+", &p));
}

}  // namespace
}  // namespace llm
}  // namespace ember
