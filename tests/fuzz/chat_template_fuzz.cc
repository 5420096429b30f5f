// Fuzz target: chat templates (examples/llm/chat) are user-provided text. The input is a template; it is parsed,
// and if it parses, rendered over a small conversation with tool calls, with and without a generation prompt,
// under small limits. Either may fail with a ChatTemplateError; neither may crash, read out of bounds, overflow,
// run past its step budget or write past its output limit (checked here).
#include <stdio.h>
#include <stdlib.h>

#include <string>

#include "examples/llm/chat/chat_template.h"

namespace ember {
namespace {

constexpr size_t kMaxOutput = 1 << 16;

const llm::JsonValue& conversation() {
  static const llm::JsonValue* messages = [] {
    auto v = llm::parse_json(R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Grüße 👋  "},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345", "type": "function",
        "function": {"name": "f", "arguments": {"x": 1.5, "y": [true, null]}}}]},
      {"role": "tool", "tool_call_id": "call12345", "content": "ok"},
      {"role": "assistant", "content": "Done.", "reasoning_content": "r"}
    ])");
    return new llm::JsonValue(std::move(v.get()));
  }();
  return *messages;
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  llm::ChatTemplateError error;
  auto t = llm::ChatTemplate::parse(std::string(reinterpret_cast<const char*>(data), size), &error);
  if (!t.ok()) return 0;
  t->set_variable("bos_token", "<s>");
  t->set_variable("eos_token", "</s>");
  llm::chat::RenderLimits limits;
  limits.max_output_bytes = kMaxOutput;
  limits.max_steps = 100000;
  t->set_limits(limits);
  for (bool prompt : {false, true}) {
    auto out = t->render_json(conversation(), prompt, nullptr, &error);
    if (out.ok() && out->size() > kMaxOutput) {
      fprintf(stderr, "chat_template_fuzz: %zu bytes rendered past the %zu-byte limit\n", out->size(), kMaxOutput);
      abort();
    }
  }
  return 0;
}
