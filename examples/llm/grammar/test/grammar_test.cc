// The GBNF parser's errors, the matcher's bounds and rollback, the JSON Schema compiler's language, and the token
// mask against a brute-force check of every token.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "examples/llm/grammar/constraint.h"
#include "examples/llm/grammar/gbnf.h"
#include "examples/llm/grammar/json_schema.h"
#include "examples/llm/grammar/matcher.h"

using namespace ember::llm;

namespace {

std::string parse_error(const std::string& text) {
  Grammar g;
  std::string error;
  EXPECT_FALSE(parse_gbnf(text, &g, &error)) << text;
  return error;
}

// Whether the whole text is a sentence of the grammar.
bool matches(const Grammar& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

bool prefix_ok(const Grammar& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text);
}

Grammar gbnf(const std::string& text) {
  Grammar g;
  std::string error;
  EXPECT_TRUE(parse_gbnf(text, &g, &error)) << error;
  return g;
}

Grammar schema(const std::string& text) {
  std::string g, error;
  EXPECT_TRUE(json_schema_to_gbnf(text, &g, &error)) << error;
  return gbnf(g);
}

TEST(Gbnf, ErrorsNameLineColumnByteAndRule) {
  EXPECT_EQ(parse_error("root ::= \"a\"\nx ::= [a-\n"),
            "line 2, column 7 (byte 19), rule 'x': character class not closed with ']'");
  EXPECT_EQ(parse_error("root ::= foo"),
            "line 1, column 10 (byte 9), rule 'root': rule 'foo' is used but never defined");
  EXPECT_EQ(parse_error("root ::= \"a\" )"), "line 1, column 14 (byte 13), rule 'root': unexpected character ')'");
  EXPECT_EQ(parse_error("root ::= \"\\q\""), "line 1, column 11 (byte 10), rule 'root': unknown escape '\\q'");
  EXPECT_EQ(parse_error("root ::= \"a\"{3,1}"),
            "line 1, column 17 (byte 16), rule 'root': repetition {m,n} with n below m");
  EXPECT_EQ(parse_error("a ::= \"x\""), "the grammar has no rule 'root' (the start rule)");
  EXPECT_EQ(parse_error("root ::= \"a\"\nroot ::= \"b\""),
            "line 2, column 1 (byte 13), rule 'root': rule 'root' is defined twice");
  EXPECT_EQ(parse_error(""), "line 1, column 1 (byte 0): the grammar is empty: expected a rule 'name ::= ...'");
  // An undefined rule is reported where it is used, in the rule that uses it.
  EXPECT_EQ(parse_error("root ::= a\na ::= \"x\" b\n"),
            "line 2, column 11 (byte 21), rule 'a': rule 'b' is used but never defined");
}

// The hostile inputs a fuzzer tries first: each refusal names the limit (by its constant), the rule and where.
TEST(Gbnf, LimitsAreNamed) {
  EXPECT_EQ(parse_error("root ::= x\nx ::= \"a\"{0,100000}"),
            "line 2, column 18 (byte 28), rule 'x': repetition count above 10000 (kMaxGbnfRepeat)");
  std::string deep = "root ::= \"a\"\nd ::= ";
  for (int i = 0; i < 100; ++i) deep += "(";
  EXPECT_EQ(parse_error(deep),
            "line 2, column 71 (byte 83), rule 'd': groups nest more than 64 deep (kMaxGbnfNesting)");
  // Bad UTF-8 in a character class (a lone lead byte), and a surrogate escape.
  EXPECT_EQ(parse_error("root ::= c\nc ::= [a\xC3]"),
            "line 2, column 9 (byte 19), rule 'c': invalid UTF-8 in the grammar");
  EXPECT_EQ(parse_error("root ::= [\\uD800]"),
            "line 1, column 17 (byte 16), rule 'root': escape is not a Unicode scalar value");
  // Repetitions that add up past the element bound (a group repeated is one element; copies in a sequence are not).
  std::string wide = "root ::= \"a\"\nw ::=";
  for (int i = 0; i < 110; ++i) wide += " \"ab\"{10000}";
  const std::string big = parse_error(wide);
  EXPECT_NE(big.find("rule 'w': the grammar is too large: more than 1048576 elements"), std::string::npos) << big;
  EXPECT_NE(big.find("(kMaxGbnfElements)"), std::string::npos) << big;
}

TEST(Gbnf, LeftRecursionIsRefusedByName) {
  EXPECT_NE(parse_error("root ::= root \"a\" | \"a\"").find("rule 'root' is left-recursive"), std::string::npos);
  // Through a rule that can match nothing.
  const std::string e = parse_error("root ::= opt expr\nopt ::= \"x\"?\nexpr ::= root \"+\" | \"1\"");
  EXPECT_NE(e.find("left-recursive"), std::string::npos) << e;
  // A nullable repetition of a nullable item loops too.
  EXPECT_NE(parse_error("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
}

TEST(Gbnf, HostileInputIsBounded) {
  EXPECT_NE(parse_error("root ::= \"a\"{1,100000}").find("repetition count above"), std::string::npos);
  std::string deep = "root ::= ";
  for (int i = 0; i < 100; ++i) deep += "(";
  EXPECT_NE(parse_error(deep).find("nest more than 64"), std::string::npos);
  // Deep right recursion that is not a tail call: the matcher refuses past its stack bound, it does not crash.
  Grammar g = gbnf("root ::= \"(\" root \")\" | \"x\"");
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_bytes(std::string(kMaxStackDepth + 10, '(')));
  EXPECT_TRUE(m.overflowed());
  // Exponentially ambiguous: every prefix has a bounded, deduplicated state.
  Grammar amb = gbnf("root ::= (\"a\" | \"a\" | \"aa\")*");
  EXPECT_TRUE(matches(amb, std::string(500, 'a')));
}

TEST(Gbnf, Syntax) {
  Grammar g = gbnf(
      "# comment\nroot ::= word (\",\" word){0,2} tail\nword ::= [a-c]+ | [^\\x00-\\x7F]\n"
      "tail ::= \"!\"? \"\\n\"");
  EXPECT_TRUE(matches(g, "ab,c\n"));
  EXPECT_TRUE(matches(g, "a,b,c!\n"));
  EXPECT_FALSE(matches(g, "a,b,c,a\n"));   // at most 2 more words
  EXPECT_TRUE(matches(g, "\xC3\xA9\n"));   // é, any non-ASCII code point
  EXPECT_TRUE(matches(g, "\xF0\x9F\x98\x80\n"));  // a 4-byte character
  EXPECT_FALSE(matches(g, "\xED\xA0\x80\n"));     // a surrogate is not UTF-8
  EXPECT_TRUE(prefix_ok(g, "\xF0\x9F"));          // half a character is a valid prefix
  EXPECT_FALSE(matches(g, "d\n"));
  Grammar any = gbnf("root ::= . .");
  EXPECT_TRUE(matches(any, "a\xE2\x82\xAC"));
  EXPECT_FALSE(matches(any, "a"));
}

TEST(Matcher, Rollback) {
  Grammar g = gbnf("root ::= \"ab\" \"c\"* \"d\"");
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_bytes("a"));
  EXPECT_TRUE(m.accept_bytes("bc"));
  EXPECT_FALSE(m.accept_bytes("x"));
  EXPECT_TRUE(m.accept_bytes("cd"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.finished());
  m.rollback(2);
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_bytes("bd"));
  EXPECT_TRUE(m.can_end());
}

TEST(JsonSchema, Keywords) {
  Grammar obj = schema(R"({"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":120},
      "b":{"type":"string","minLength":1,"maxLength":3},"c":{"enum":["x",1,null]}},"required":["a"]})");
  EXPECT_TRUE(matches(obj, R"({"a":-5})"));
  EXPECT_TRUE(matches(obj, R"({"a":120,"b":"xyz","c":null})"));
  EXPECT_TRUE(matches(obj, R"({"a":7,"c":"x"})"));
  EXPECT_FALSE(matches(obj, R"({"a":121})"));
  EXPECT_FALSE(matches(obj, R"({"a":-6})"));
  EXPECT_FALSE(matches(obj, R"({"a":05})"));
  EXPECT_FALSE(matches(obj, R"({"b":"x"})"));            // a is required
  EXPECT_FALSE(matches(obj, R"({"a":1,"b":""})"));       // minLength
  EXPECT_FALSE(matches(obj, R"({"a":1,"b":"abcd"})"));   // maxLength
  EXPECT_FALSE(matches(obj, R"({"a":1,"d":1})"));        // strict: no other properties
  EXPECT_FALSE(matches(obj, R"({"a":1,"c":2})"));
  EXPECT_FALSE(matches(obj, R"({"a": 1})"));             // no whitespace
  Grammar arr = schema(R"({"type":"array","items":{"anyOf":[{"type":"boolean"},{"const":{"k":[1]}}]},
      "minItems":1,"maxItems":2})");
  EXPECT_TRUE(matches(arr, R"([true])"));
  EXPECT_TRUE(matches(arr, R"([{"k":[1]},false])"));
  EXPECT_FALSE(matches(arr, R"([])"));
  EXPECT_FALSE(matches(arr, R"([true,true,true])"));
  Grammar str = schema(R"({"type":"string"})");
  EXPECT_TRUE(matches(str, R"("a\"b\\c\u00e9\n\/")"));
  EXPECT_TRUE(matches(str, "\"\xC3\xA9\""));
  EXPECT_FALSE(matches(str, "\"a\nb\""));   // a raw control character
  EXPECT_FALSE(matches(str, R"("\x")"));
  Grammar num = schema(R"({"type":"number","minimum":-2,"maximum":3})");
  EXPECT_TRUE(matches(num, "2.75"));
  EXPECT_TRUE(matches(num, "-1.5"));
  EXPECT_TRUE(matches(num, "3"));
  EXPECT_FALSE(matches(num, "3.5"));
  EXPECT_FALSE(matches(num, "-2.5"));
  Grammar extra = schema(R"({"type":"object","properties":{"a":{"type":"null"}},"additionalProperties":
      {"type":"integer"}})");
  EXPECT_TRUE(matches(extra, R"({"a":null,"x":1,"y":2})"));
  EXPECT_TRUE(matches(extra, R"({"x":1})"));
  EXPECT_FALSE(matches(extra, R"({"x":"s"})"));
}

TEST(JsonSchema, ErrorsNameThePointer) {
  std::string g, error;
  EXPECT_FALSE(json_schema_to_gbnf(R"({"properties":{"a":{"type":"string","pattern":"x"}}})", &g, &error));
  EXPECT_EQ(error, "/properties/a/pattern: keyword 'pattern' is not supported");
  EXPECT_FALSE(json_schema_to_gbnf(R"({"type":"array","items":{"minItems":3,"maxItems":2}})", &g, &error));
  EXPECT_EQ(error, "/items: maxItems is below minItems");
  EXPECT_FALSE(json_schema_to_gbnf(R"({"type":"integer","minimum":3,"maximum":1})", &g, &error));
  EXPECT_EQ(error, "/: maximum is below minimum");
  EXPECT_FALSE(json_schema_to_gbnf("{\"type\":", &g, &error));
  EXPECT_EQ(
      error,
      "the schema is not valid JSON: JSON: expected a value at byte 8 (line 1, column 9; the document ends there)");
}

// Schema refusals name the JSON pointer and the limit; a compiled grammar past the GBNF bounds names the schema
// part that made it.
TEST(JsonSchema, LimitsNameThePointer) {
  std::string g, error;
  EXPECT_FALSE(json_schema_to_gbnf(R"({"properties":{"items":{"type":"array","maxItems":100000}}})", &g, &error));
  EXPECT_EQ(error, "/properties/items/maxItems: 100000 is above the limit of 10000 (kMaxSchemaCount)");
  EXPECT_FALSE(json_schema_to_gbnf(R"({"type":"string","minLength":-1})", &g, &error));
  EXPECT_EQ(error, "/minLength: must be a non-negative integer");
  std::string deep = "{}";
  for (int i = 0; i < 70; ++i) deep = "{\"items\":" + deep + "}";
  EXPECT_FALSE(json_schema_to_gbnf(deep, &g, &error));
  EXPECT_NE(error.find(": schemas nest more than 64 deep (kMaxSchemaNesting)"), std::string::npos) << error;
  EXPECT_EQ(error.compare(0, 8, "/items/i"), 0) << error;
  // Each level's list of up to 10000 items is a chain of helper rules; nested, they pass the GBNF element bound.
  std::string wide = R"({"type":"integer"})";
  for (int i = 0; i < 40; ++i) wide = R"({"type":"array","maxItems":10000,"items":)" + wide + "}";
  TokenVocabulary vocab({"[", "]", ",", "1"}, {});
  EXPECT_EQ(GrammarConstraint::load_json_schema(wide, vocab, &error), nullptr);
  EXPECT_EQ(error.compare(0, 7, "/items/"), 0) << error;
  EXPECT_NE(error.find(": the schema's grammar is refused: line "), std::string::npos) << error;
  EXPECT_NE(error.find("(kMaxGbnfElements)"), std::string::npos) << error;
  EXPECT_EQ(schema_rule_pointer("root ::= s2\n# /properties/a\ns1 ::= \"x\"\n# /\ns2 ::= s1\n", "s1~4"),
            "/properties/a");
  EXPECT_EQ(schema_rule_pointer("root ::= s2\n", "json-value"), "");
}

// Mutated grammars and schemas (seeded): each is refused with a message or runs; the matcher then takes random
// bytes within its bounds. Nothing may crash or hang (CI runs this under AddressSanitizer too).
TEST(Hostile, MutatedInputNeverCrashes) {
  const std::vector<std::string> seeds = {
      "root ::= obj\nobj ::= \"{\" (pair (\",\" pair)*)? \"}\"\npair ::= [a-z]+ \":\" (obj | [0-9]{1,3})\n",
      "root ::= (\"a\" | [^\\x00-\\x7F] | x)* \"!\"?\nx ::= \"(\" root \")\"\n",
      R"({"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"integer","minimum":-3,
"maximum":70},{"type":"string","maxLength":2}]}}},"required":["a"]})",
  };
  const std::string alphabet = "()[]{}|*+?^-\\\":=#.,0123456789ax \n\x80\xff";
  uint64_t state = 12345;
  auto next = [&state]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>(state >> 33);
  };
  size_t accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = seeds[next() % seeds.size()];
    for (int k = 1 + static_cast<int>(next() % 4); k > 0; --k) {
      const size_t at = next() % (text.size() + 1);
      switch (next() % 3) {
        case 0: text.insert(at, 1, alphabet[next() % alphabet.size()]); break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = alphabet[next() % alphabet.size()];
          break;
      }
    }
    std::string gbnf_text = text, error;
    if (text[0] == '{' && !json_schema_to_gbnf(text, &gbnf_text, &error)) {
      EXPECT_FALSE(error.empty());
      continue;
    }
    Grammar g;
    if (!parse_gbnf(gbnf_text, &g, &error)) {
      EXPECT_FALSE(error.empty());
      continue;
    }
    ++accepted;
    GrammarMatcher m(g);
    for (int b = 0; b < 64; ++b) m.accept_bytes(std::string(1, alphabet[next() % alphabet.size()]));
  }
  EXPECT_GT(accepted, 100u);  // the mutations also reach the matcher
}

// The mask equals, token by token, what feeding each token's bytes to a fresh copy of the matcher says.
TEST(TokenMask, EqualsBruteForce) {
  std::vector<std::string> tokens = {"",         "{",    "}",  "\"",  "\"a", "a\"",    "a",    ":",   ",",    "1",
                                     "12",       "0",    "-",  "{\"", "\":", "tr",     "true", "ue",  "\xC3", "\xA9",
                                     "\xC3\xA9", "null", "}}", "[",   "]",   "a\":1}", "\\",   "\\u", "00e9", "b"};
  const int32_t eos = 0;
  TokenVocabulary vocab(tokens, {eos});
  std::string g_text, error;
  ASSERT_TRUE(json_schema_to_gbnf(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"string"}}}})",
      &g_text, &error));
  std::unique_ptr<GrammarConstraint> c = GrammarConstraint::load_gbnf(g_text, vocab, &error);
  ASSERT_NE(c, nullptr) << error;
  Grammar g = gbnf(g_text);
  const std::vector<std::string> path = {"{",  "\"a",  "\":",  "12",  ",",    "\"", "b", "\":", "[",
                                         "\"", "\xC3", "\xA9", "\\u", "00e9", "\"", "]", "}"};
  std::string so_far;
  for (size_t step = 0; step <= path.size(); ++step) {
    std::vector<uint32_t> mask(c->words());
    c->mask(mask.data());
    for (size_t i = 1; i < tokens.size(); ++i) {
      GrammarMatcher m(g);
      const bool expect = m.accept_bytes(so_far + tokens[i]);
      EXPECT_EQ(((mask[i / 32] >> (i % 32)) & 1) != 0, expect) << "step " << step << " token '" << tokens[i] << "'";
    }
    EXPECT_EQ((mask[0] & 1) != 0, step == path.size()) << "EOS at step " << step;
    if (step == path.size()) break;
    int32_t id = -1;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] == path[step]) id = static_cast<int32_t>(i);
    }
    ASSERT_TRUE(c->accept(id)) << path[step];
    so_far += path[step];
  }
  EXPECT_TRUE(c->can_end());
  EXPECT_GT(c->masker().hits() + c->masker().walks(), 0u);
}

// A shallow grammar, whose stacks lie wholly inside the local cache's key: a token may end the sentence in the
// middle of a bounded repetition, and the local walk decides it without the real stacks. Same check as above.
TEST(TokenMask, ShallowGrammarEqualsBruteForce) {
  const std::vector<std::string> tokens = {"",  "a",   "ab",       "abc",  "abcd", "a.",        "ab!", ".",   "!",
                                           " ", "a b", "\xC3\xA9", "\xC3", "\xA9", "b\xC3\xA9", "ba",  "bab", "."};
  TokenVocabulary vocab(tokens, {0});
  const std::string g_text = "root ::= [ab\\u00e9]{1,4} (\".\" | \"!\")?\n";
  std::string error;
  std::unique_ptr<GrammarConstraint> c = GrammarConstraint::load_gbnf(g_text, vocab, &error);
  ASSERT_NE(c, nullptr) << error;
  Grammar g = gbnf(g_text);
  std::string so_far;
  for (const std::string& next : {std::string("a"), std::string("b\xC3\xA9"), std::string("!")}) {
    std::vector<uint32_t> mask(c->words());
    c->mask(mask.data());
    for (size_t i = 1; i < tokens.size(); ++i) {
      GrammarMatcher m(g);
      const bool expect = m.accept_bytes(so_far + tokens[i]);
      EXPECT_EQ(((mask[i / 32] >> (i % 32)) & 1) != 0, expect)
          << "after '" << so_far << "' token '" << tokens[i] << "'";
    }
    EXPECT_EQ((mask[0] & 1) != 0, c->can_end()) << "EOS after '" << so_far << "'";
    int32_t id = -1;
    for (size_t i = 1; i < tokens.size() && id < 0; ++i) {
      if (tokens[i] == next) id = static_cast<int32_t>(i);
    }
    ASSERT_TRUE(c->accept(id)) << next;
    so_far += next;
  }
  std::vector<uint32_t> mask(c->words());
  c->mask(mask.data());
  EXPECT_EQ(mask[0], 1u) << "after 'ab\xC3\xA9!' only the end may come";
}

// Refused tokens and the padding past the vocabulary become -infinity; allowed ones keep their logit, across
// words that are all refused, all allowed and mixed.
TEST(TokenMask, MaskLogits) {
  const size_t n_tokens = 70, n_logits = 80;
  std::vector<uint32_t> mask = {0u, ~0u, 0x5u};  // tokens 32..63, 64 and 66
  std::vector<float> logits(n_logits), out(n_logits, 0.f);
  for (size_t i = 0; i < n_logits; ++i) logits[i] = static_cast<float>(i) + 0.5f;
  mask_logits(mask.data(), n_tokens, logits.data(), n_logits, out.data());
  for (size_t i = 0; i < n_logits; ++i) {
    const bool allowed = i < n_tokens && ((mask[i / 32] >> (i % 32)) & 1);
    if (allowed) {
      EXPECT_EQ(out[i], logits[i]) << i;
    } else {
      EXPECT_TRUE(std::isinf(out[i]) && out[i] < 0) << i;
    }
  }
}

}  // namespace
