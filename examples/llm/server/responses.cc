#include "examples/llm/server/responses.h"

#include "examples/llm/server/json_writer.h"

namespace ember {
namespace llm {
namespace server {

namespace {

// The members every body of an answer starts with; `object` names its kind.
void head(JsonWriter& w, const Answer& a, const char* object) {
  w.key("id").string(a.id).key("object").string(object).key("created").number(a.created);
  w.key("model").string(a.model);
}

void usage(JsonWriter& w, const GenerationOutcome& o) {
  w.key("usage").begin_object();
  w.key("prompt_tokens").number(static_cast<int64_t>(o.prompt_tokens));
  w.key("completion_tokens").number(static_cast<int64_t>(o.completion_tokens));
  w.key("total_tokens").number(static_cast<int64_t>(o.prompt_tokens + o.completion_tokens));
  w.key("prompt_tokens_details").begin_object().key("cached_tokens").number(static_cast<int64_t>(o.cached_tokens));
  w.end_object();
  w.end_object();
}

// [{"id": ..., "type": "function", "function": {"name": ..., "arguments": "..."}}], with "index" in a stream.
void tool_calls(JsonWriter& w, const ToolCall& call, bool indexed) {
  w.key("tool_calls").begin_array().begin_object();
  if (indexed) w.key("index").number(int64_t{0});
  w.key("id").string(call.id).key("type").string("function");
  w.key("function").begin_object().key("name").string(call.name).key("arguments").string(call.arguments);
  w.end_object().end_object().end_array();
}

const char* chunk_object(const Answer& a) { return a.chat ? "chat.completion.chunk" : "text_completion"; }

// One choice of a chunk: a chat's delta (the text, or the role) or a completion's text, then the finish reason.
std::string chunk(const Answer& a, const char* role, const std::string* text, const char* finish_reason) {
  JsonWriter w;
  w.begin_object();
  head(w, a, chunk_object(a));
  w.key("choices").begin_array().begin_object().key("index").number(int64_t{0});
  if (a.chat) {
    w.key("delta").begin_object();
    if (role != nullptr) w.key("role").string(role).key("content").string("");
    if (text != nullptr) w.key("content").string(*text);
    w.end_object();
  } else {
    w.key("text").string(text != nullptr ? *text : std::string()).key("logprobs").null();
  }
  w.key("finish_reason");
  if (finish_reason != nullptr) {
    w.string(finish_reason);
  } else {
    w.null();
  }
  w.end_object().end_array().end_object();
  return w.str();
}

}  // namespace

std::string error_body(const RequestError& error) {
  JsonWriter w;
  w.begin_object().key("error").begin_object();
  w.key("message").string(error.message).key("type").string(error.type);
  w.key("param");
  if (error.param.empty()) {
    w.null();
  } else {
    w.string(error.param);
  }
  w.key("code").null();
  w.end_object().end_object();
  return w.str();
}

std::string completion_body(const Answer& a, const std::string& text, const GenerationOutcome& outcome) {
  JsonWriter w;
  w.begin_object();
  head(w, a, a.chat ? "chat.completion" : "text_completion");
  w.key("choices").begin_array().begin_object().key("index").number(int64_t{0});
  if (a.chat) {
    w.key("message").begin_object().key("role").string("assistant").key("content").string(text).end_object();
  } else {
    w.key("text").string(text);
  }
  w.key("logprobs").null().key("finish_reason").string(outcome.finish_reason);
  w.end_object().end_array();
  usage(w, outcome);
  w.end_object();
  return w.str();
}

std::string tool_call_body(const Answer& a, const ToolCall& call, const GenerationOutcome& outcome) {
  JsonWriter w;
  w.begin_object();
  head(w, a, "chat.completion");
  w.key("choices").begin_array().begin_object().key("index").number(int64_t{0});
  w.key("message").begin_object().key("role").string("assistant").key("content").null();
  tool_calls(w, call, false);
  w.end_object().key("logprobs").null().key("finish_reason").string("tool_calls");
  w.end_object().end_array();
  usage(w, outcome);
  w.end_object();
  return w.str();
}

std::string tool_call_chunk(const Answer& a, const ToolCall& call) {
  JsonWriter w;
  w.begin_object();
  head(w, a, chunk_object(a));
  w.key("choices").begin_array().begin_object().key("index").number(int64_t{0});
  w.key("delta").begin_object();
  tool_calls(w, call, true);
  w.end_object().key("finish_reason").null();
  w.end_object().end_array().end_object();
  return w.str();
}

std::string role_chunk(const Answer& a) { return chunk(a, "assistant", nullptr, nullptr); }
std::string text_chunk(const Answer& a, const std::string& text) { return chunk(a, nullptr, &text, nullptr); }
std::string finish_chunk(const Answer& a, const char* finish_reason) {
  return chunk(a, nullptr, nullptr, finish_reason);
}

std::string usage_chunk(const Answer& a, const GenerationOutcome& outcome) {
  JsonWriter w;
  w.begin_object();
  head(w, a, chunk_object(a));
  w.key("choices").begin_array().end_array();
  usage(w, outcome);
  w.end_object();
  return w.str();
}

std::string sse_event(const std::string& json) { return "data: " + json + "\n\n"; }

std::string model_body(const std::string& model, int64_t created) {
  JsonWriter w;
  w.begin_object().key("id").string(model).key("object").string("model").key("created").number(created);
  w.key("owned_by").string("ember").end_object();
  return w.str();
}

std::string models_body(const std::string& model, int64_t created) {
  JsonWriter w;
  w.begin_object().key("object").string("list").key("data").begin_array().raw(model_body(model, created));
  w.end_array().end_object();
  return w.str();
}

}  // namespace server
}  // namespace llm
}  // namespace ember
