// The JSON bodies the server answers with, in the shapes of OpenAI's API (what its client libraries parse):
// whole completions, the chunks of a stream (each sent as a server-sent event, "data: <json>\n\n", the stream
// ending with "data: [DONE]\n\n"), the model list and errors.
#pragma once

#include <stdint.h>

#include <string>

#include "examples/llm/server/request.h"
#include "examples/llm/server/tool_calls.h"

namespace ember {
namespace llm {
namespace server {

// What every body of one answer shares.
struct Answer {
  bool chat = false;
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

std::string error_body(const RequestError& error);
std::string completion_body(const Answer& answer, const std::string& text, const GenerationOutcome& outcome);
// A chat reply that calls a tool: no content, the call, finish reason "tool_calls".
std::string tool_call_body(const Answer& answer, const ToolCall& call, const GenerationOutcome& outcome);

// Stream chunks: the first of a chat stream names the role; then one per piece of text; then the finish reason;
// then, when asked for (stream_options.include_usage), the token counts with no choices.
std::string role_chunk(const Answer& answer);
std::string text_chunk(const Answer& answer, const std::string& text);
// A streamed tool call, whole in one delta (its arguments are only known valid once complete).
std::string tool_call_chunk(const Answer& answer, const ToolCall& call);
std::string finish_chunk(const Answer& answer, const char* finish_reason);
std::string usage_chunk(const Answer& answer, const GenerationOutcome& outcome);
// `json` as one server-sent event.
std::string sse_event(const std::string& json);
constexpr const char* kSseDone = "data: [DONE]\n\n";

std::string models_body(const std::string& model, int64_t created);
std::string model_body(const std::string& model, int64_t created);

}  // namespace server
}  // namespace llm
}  // namespace ember
