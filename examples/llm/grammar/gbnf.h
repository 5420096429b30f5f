// GBNF (llama.cpp's grammar syntax) to a byte-level Grammar.
//
//   root   ::= object                      # a rule: name ::= alternatives
//   object ::= "{" ( pair ( "," pair )* )? "}"
//   pair   ::= str ":" [0-9]+ | str ":" "true"
//   str    ::= "\"" [^"\\\x00-\x1f]{1,16} "\""
//
// Names are letters, digits, '-' and '_'. Elements: "literals" and [classes] (negated [^...], ranges a-z) with
// the escapes \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH; '.' (any code point); rule names; ( groups );
// each followed by at most one of ?, *, + or {m}, {m,}, {m,n}. '#' starts a comment to the end of the line. A
// rule's body may span lines: it ends where the next `name ::=` starts.
//
// The text is hostile input: errors name the line and column, groups nest at most kMaxGbnfNesting deep,
// repetition counts are bounded (kMaxGbnfRepeat) and so is the grammar's size (kMaxGbnfElements), and
// left-recursive rules are refused by name, so nothing the matcher is given can make it loop.
#pragma once

#include <stddef.h>

#include <string>
#include <string_view>

#include "examples/llm/grammar/grammar.h"

namespace ember {
namespace llm {

constexpr int kMaxGbnfNesting = 64;
constexpr unsigned kMaxGbnfRepeat = 10000;
constexpr size_t kMaxGbnfElements = size_t{1} << 20;

// Parses `text` with start rule `root`. False with `error` ("line L, column C: what") on failure.
bool parse_gbnf(std::string_view text, Grammar* out, std::string* error, std::string_view root = "root");

}  // namespace llm
}  // namespace ember
