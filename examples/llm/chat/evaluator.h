// Renders a parsed template over its variables, as Jinja does in transformers' sandbox: `set` inside a for loop
// stays in that iteration (namespaces carry values out), `if` opens no scope, undefined names print as nothing but
// fail when used as values, and raise_exception() stops rendering with the template's message.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "examples/llm/chat/ast.h"

namespace ember {
namespace llm {
namespace chat {

// What a rendering may spend: the bytes it writes, and its steps (statements, expressions, loop iterations and
// bytes of strings built), so a hostile template fails with a message instead of running or growing unbounded.
struct RenderLimits {
  size_t max_output_bytes = size_t{4} << 20;
  uint64_t max_steps = 20000000;
};

// Renders `body` with `variables` as the global scope. False with *error (message, and the place when one is
// known) on failure; *out then holds what was written before it.
bool render_template(const Body& body, const ValueDict& variables, const RenderLimits& limits, std::string* out,
                     TemplateError* error);

}  // namespace chat
}  // namespace llm
}  // namespace ember
