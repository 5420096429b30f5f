// The JSON reader: documents it accepts, and named errors (line and column) for those it refuses.
#include "examples/llm/tokenizer/json.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace llm {
namespace {

TEST(Json, ParsesNestedValues) {
  auto v =
      parse_json(R"( {"a": [1, -2.5e1, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} )");
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->is_object());
  const JsonValue* a = v->find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 5u);
  EXPECT_TRUE(a->items()[0].is_integer());
  EXPECT_EQ(a->items()[0].as_int(), 1);
  EXPECT_DOUBLE_EQ(a->items()[1].as_double(), -25.0);
  EXPECT_TRUE(a->items()[2].as_bool());
  EXPECT_FALSE(a->items()[3].as_bool());
  EXPECT_TRUE(a->items()[4].is_null());
  EXPECT_EQ(v->find("s")->as_string(), "x\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_TRUE(v->find("o")->is_object());
  EXPECT_EQ(v->find("missing"), nullptr);
}

struct Bad {
  const char* text;
  const char* message;
};

class JsonErrors : public ::testing::TestWithParam<Bad> {};

TEST_P(JsonErrors, AreNamed) {
  testing::clear_log();
  auto v = parse_json(GetParam().text);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, JsonErrors,
    ::testing::Values(
        Bad{"", "JSON: expected a value at byte 0 (line 1, column 1; the document ends there)"},
        Bad{"{\"a\": 1,}", "JSON: expected a string key at byte 8 (line 1, column 9)"},
        Bad{"{\"a\" 1}", "JSON: expected ':' at byte 5 (line 1, column 6)"},
        Bad{"[1 2]", "JSON: expected ',' or ']' at byte 3 (line 1, column 4)"},
        Bad{"{\"a\": 1\n\"b\": 2}", "JSON: expected ',' or '}' at byte 8 (line 2, column 1)"},
        Bad{"\"abc", "JSON: expected '\"' closing the string at byte 4 (line 1, column 5; the document ends there)"},
        Bad{"\"a\\qb\"", "JSON: expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u at byte 3 (line 1, column 4)"},
        Bad{"\"\\u12\"", "JSON: expected 4 hex digits after \\u at byte 3 (line 1, column 4)"},
        Bad{"\"\\udc00\"",
            "JSON: expected a high surrogate before a low one (\\u escape) at byte 7 (line 1, column 8)"},
        Bad{"\"\\ud800x\"",
            "JSON: expected a low surrogate \\uDC00-\\uDFFF after a high one at byte 7 (line 1, column 8)"},
        Bad{"\"a\tb\"", "JSON: expected no control character inside a string at byte 2 (line 1, column 3)"},
        Bad{"\"\xFF\"", "JSON: expected UTF-8 text at byte 1 (line 1, column 2)"},
        Bad{"-", "JSON: expected a digit at byte 1 (line 1, column 2; the document ends there)"},
        Bad{"1.", "JSON: expected a digit after '.' at byte 2 (line 1, column 3; the document ends there)"},
        Bad{"1e+", "JSON: expected a digit in the exponent at byte 3 (line 1, column 4; the document ends there)"},
        Bad{"tru", "JSON: expected a value at byte 0 (line 1, column 1)"},
        Bad{"{} x", "JSON: expected end of document at byte 3 (line 1, column 4)"}));

TEST(Json, NestingIsBounded) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_json(ok).ok());
  const std::string deep = std::string(100000, '[');
  testing::clear_log();
  auto v = parse_json(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(
      testing::last_log(),
      "JSON: more than 128 nested arrays and objects (the limit, kMaxJsonDepth) at byte 128 (line 1, column 129)");
}

}  // namespace
}  // namespace llm
}  // namespace ember
