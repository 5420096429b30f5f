// JSON Schema to GBNF (gbnf.h), so a schema runs through the same parser and matcher as a hand-written grammar
// and its grammar can be printed (grammar_tool --print-grammar) or given to another engine.
//
// Output policy: compact JSON, no whitespace anywhere (separators "," and ":"); object properties in the order
// the schema lists them, each required one present, optional ones may be left out; strict: without
// "additionalProperties" an object has only its listed properties (additionalProperties true or a schema
// allows more after them); an array without "items" holds any JSON values.
//
// Integers are written without leading zeros and never as -0 (as xgrammar writes them); numbers as JSON's grammar.
//
// Keywords: type (a name or a list), properties, required, additionalProperties, items, enum, const,
// minItems/maxItems, minLength/maxLength (in code points), minimum/maximum (integers: exact; numbers: integral
// bounds, no exponent), anyOf, and nested objects and arrays to any depth the JSON reader accepts. Strings
// allow every code point but '"', '\' and controls, and the escapes \" \\ \/ \b \f \n \r \t \uXXXX.
// Annotations (title, description, default, examples, $schema, $id, $comment) are ignored; any other keyword
// is refused, naming it and its JSON pointer, rather than silently producing text that may not validate.
#pragma once

#include <stdint.h>

#include <string>
#include <string_view>

namespace ember {
namespace llm {

// Bounds on what a hostile schema may ask for: minItems/maxItems/minLength/maxLength, and nesting.
constexpr int64_t kMaxSchemaCount = 10000;
constexpr int kMaxSchemaNesting = 64;

// The GBNF of `schema` (a JSON document), start rule "root". False with `error` ("/properties/x: why").
bool json_schema_to_gbnf(std::string_view schema, std::string* gbnf, std::string* error);

// The JSON pointer of the schema part that rule `rule` of `gbnf` (json_schema_to_gbnf's output) was made for, ""
// when it is not one of those rules: so a refusal of the compiled grammar can say where in the schema it was.
std::string schema_rule_pointer(std::string_view gbnf, std::string_view rule);

}  // namespace llm
}  // namespace ember
