// A chat reply read as a call of one of the request's tools: the JSON object {"name": ..., "arguments": {...}}
// that a required tool choice constrains the reply to, and that a model asked with tool_choice "auto" may write
// instead of text ("parameters" is taken for "arguments", as several models' templates name it).
#pragma once

#include <string>

#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace server {

struct ToolCall {
  std::string id;         // "call_<n>", unique in the server's life
  std::string name;
  std::string arguments;  // JSON text, as OpenAI's API carries it
};

// True when `text` (surrounding white space allowed) is exactly such a call naming one of `tools`.
bool parse_tool_call(const std::string& text, const JsonValue& tools, ToolCall* out);

}  // namespace server
}  // namespace llm
}  // namespace ember
