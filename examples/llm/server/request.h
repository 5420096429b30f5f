// The OpenAI requests the server answers, read from their JSON bodies into what generation needs. A body is
// hostile input: every field is checked for its type and range, and a refusal names the parameter at fault in
// OpenAI's own error form (the client libraries show `param` and `message`). Fields a client may send that do not
// change Ember's answer are ignored; fields that would change it and that Ember does not implement (n > 1,
// logprobs, echo, ...) are refused by name rather than silently dropped.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace server {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy
  double top_p = 1.0;        // nucleus: the smallest set of tokens whose probabilities reach it
  bool has_seed = false;
  uint64_t seed = 0;
  int64_t max_tokens = -1;  // -1: up to the context's end
  std::vector<std::string> stop;  // at most four, as OpenAI allows
};

// Whether a chat request's reply may or must call one of its tools. Required (or a named function): the reply is
// constrained to a call, {"name": ..., "arguments": {...}} with the tool's parameter schema. Auto: free text,
// read as a call when it is exactly such an object naming a tool.
enum class ToolChoice { kNone, kAuto, kRequired };

// What a request asks for; `chat` says which endpoint it came to.
struct GenerationRequest {
  bool chat = false;
  std::string model;
  std::string prompt;               // completions: the text
  std::vector<int32_t> prompt_ids;  // completions: token ids given instead of text
  // chat: the messages as the chat template reads them (a text parts' content joined into a string, "developer"
  // as "system"; tool calls, tool results and other fields as sent), and the tools offered (null when none).
  JsonValue messages;
  JsonValue tools;
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_name;  // kRequired of one named function
  // The output's constraint, a JSON Schema's text: response_format's json_schema or json_object (any object), or
  // the tool call a required tool choice asks for. Empty: free text.
  std::string json_schema;
  SamplingOptions sampling;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the token counts
};

// What generation gave a request: why it ended and how many tokens it read and wrote.
struct GenerationOutcome {
  const char* finish_reason = "stop";  // "stop" (EOS or a stop sequence), "length", or "cancelled"
  size_t prompt_tokens = 0;
  size_t completion_tokens = 0;
  size_t cached_tokens = 0;  // of the prompt, not prefilled: kept in the slot's session or the prefix cache
};

// A refusal: HTTP status, OpenAI error type, the parameter at fault ("" for none) and the message.
struct RequestError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string param;
  std::string message;
};

// Reads a /v1/completions (chat false) or /v1/chat/completions (chat true) body. Returns false and fills *error
// when the request is refused.
bool parse_request(const std::string& body, bool chat, GenerationRequest* out, RequestError* error);

// The refusal of r.json_schema by the schema compiler (`why`, "/pointer: what"), naming the request field the
// schema came from: "response_format.json_schema.schema/properties/x: ..." or "tools[1].function.parameters/...".
RequestError schema_refusal(const GenerationRequest& r, const std::string& why);

}  // namespace server
}  // namespace llm
}  // namespace ember
