// The chat template's tokens, cut as transformers' Jinja environment cuts them (trim_blocks and lstrip_blocks on):
// text between tags, `{{ }}` and `{% %}` delimiters, and inside them names, strings, numbers and operators.
// Whitespace control is applied here: `-` strips the white space on its side of a tag, a block or comment tag
// alone on its line (lstrip_blocks) takes the spaces before it, a block or comment end takes one newline after it
// (trim_blocks), and `+` keeps what lstrip_blocks would take. Comments `{# #}` leave no token.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <string_view>
#include <vector>

namespace ember {
namespace llm {
namespace chat {

// Where something is in the template, both counted from 1 (the column in bytes).
struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

// An error with the place it refers to (line 0: no place, e.g. limits reached while rendering).
struct TemplateError {
  std::string message;
  Location where;
  bool raised = false;  // the template called raise_exception(message)
};

struct Token {
  enum class Kind {
    kText,
    kVariableBegin,
    kVariableEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInt,
    kFloat,
    kOp,
    kEnd
  };
  Kind kind;
  std::string text;  // text, name, operator, or a string literal's decoded value
  int64_t integer = 0;
  double number = 0;
  Location where;
};

// Jinja reads templates with every line break as "\n" and one final newline dropped.
std::string normalize_template_source(std::string_view source);

// Cuts a normalized source into tokens, ending with kEnd. Returns false with *error on a malformed template
// (unterminated tag, comment or string, unbalanced brackets, a character no token starts with).
bool tokenize(const std::string& source, std::vector<Token>* tokens, TemplateError* error);

}  // namespace chat
}  // namespace llm
}  // namespace ember
