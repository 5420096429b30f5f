// Template text to a tree of statements and expressions, with Jinja's grammar and operator precedence (lowest
// first): `x if c else y`, or, and, not, comparisons and `in`, + -, ~, * / // %, **, unary - +, then filters
// (`|`), tests (`is`), calls, subscripts and attributes. Unknown tags and filters are refused here, by name and
// place, so a template that parses only fails at render time on its data.
#pragma once

#include <string_view>

#include "examples/llm/chat/ast.h"

namespace ember {
namespace llm {
namespace chat {

// How deeply statements and expressions may nest: parsing and rendering recurse once per level.
constexpr int kMaxNesting = 100;

// Parses `source` (as written: line breaks and the final newline are normalized here). False with *error (message,
// line and column) when the template is malformed.
bool parse_template(std::string_view source, Body* body, TemplateError* error);

// Whether a filter or test of that name exists (the parser refuses others; builtins.cc implements these).
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

}  // namespace chat
}  // namespace llm
}  // namespace ember
