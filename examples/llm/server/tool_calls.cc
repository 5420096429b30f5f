#include "examples/llm/server/tool_calls.h"

#include <atomic>

#include "examples/llm/server/json_writer.h"

namespace ember {
namespace llm {
namespace server {

namespace {

bool names_a_tool(const JsonValue& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const JsonValue& t : tools.items()) {
    const JsonValue* fn = t.find("function");
    const JsonValue* n = fn != nullptr ? fn->find("name") : nullptr;
    if (n != nullptr && n->is_string() && n->as_string() == name) return true;
  }
  return false;
}

}  // namespace

bool parse_tool_call(const std::string& text, const JsonValue& tools, ToolCall* out) {
  std::string ignored;
  Result<JsonValue> value = parse_json(text, &ignored);  // not a call: no log line
  if (!value.ok() || !value->is_object()) return false;
  const JsonValue* name = value->find("name");
  const JsonValue* arguments = value->find("arguments");
  if (arguments == nullptr) arguments = value->find("parameters");
  if (name == nullptr || !name->is_string() || arguments == nullptr || !arguments->is_object()) return false;
  if (value->members().size() != 2 || !names_a_tool(tools, name->as_string())) return false;
  static std::atomic<uint64_t> counter{0};
  out->id = "call_" + std::to_string(counter.fetch_add(1) + 1);
  out->name = name->as_string();
  out->arguments = to_json(*arguments);
  return true;
}

}  // namespace server
}  // namespace llm
}  // namespace ember
