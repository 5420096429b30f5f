#include "examples/llm/server/request.h"

#include <stdint.h>
#include <stdio.h>

#include <algorithm>

#include "examples/llm/server/json_writer.h"
#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace server {

namespace {

// Each reader returns false after filling the error; a field that is absent (or null, as clients send for "not
// set") keeps its default.
bool refuse(RequestError* error, const char* param, std::string message) {
  error->param = param;
  error->message = std::move(message);
  return false;
}

const JsonValue* field(const JsonValue& body, const char* name) {
  const JsonValue* v = body.find(name);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

bool read_number(const JsonValue& body, const char* name, double lo, double hi, double* out, RequestError* error) {
  const JsonValue* v = field(body, name);
  if (v == nullptr) return true;
  if (!v->is_number() || !(v->as_double() >= lo && v->as_double() <= hi)) {
    char message[96];
    snprintf(message, sizeof(message), "%s must be a number from %g to %g", name, lo, hi);
    return refuse(error, name, message);
  }
  *out = v->as_double();
  return true;
}

bool read_bool(const JsonValue& body, const char* name, bool* out, RequestError* error) {
  const JsonValue* v = field(body, name);
  if (v == nullptr) return true;
  if (!v->is_bool()) return refuse(error, name, std::string(name) + " must be true or false");
  *out = v->as_bool();
  return true;
}

bool read_max_tokens(const JsonValue& body, const char* name, int64_t* out, RequestError* error) {
  const JsonValue* v = field(body, name);
  if (v == nullptr) return true;
  if (!v->is_integer() || v->as_int() < 1) return refuse(error, name, std::string(name) + " must be an integer >= 1");
  *out = v->as_int();
  return true;
}

bool read_stop(const JsonValue& body, std::vector<std::string>* out, RequestError* error) {
  const JsonValue* v = field(body, "stop");
  if (v == nullptr) return true;
  if (v->is_string()) {
    if (!v->as_string().empty()) out->push_back(v->as_string());
    return true;
  }
  if (!v->is_array() || v->items().size() > 4) return refuse(error, "stop", "stop must be a string or up to 4 strings");
  for (size_t i = 0; i < v->items().size(); ++i) {
    const JsonValue& s = v->items()[i];
    if (!s.is_string()) {
      return refuse(error, "stop", "stop[" + std::to_string(i) + "] must be a string, not " + s.kind_name());
    }
    if (!s.as_string().empty()) out->push_back(s.as_string());
  }
  return true;
}

bool read_seed(const JsonValue& body, SamplingOptions* out, RequestError* error) {
  const JsonValue* v = field(body, "seed");
  if (v == nullptr) return true;
  if (!v->is_integer()) return refuse(error, "seed", "seed must be an integer");
  out->has_seed = true;
  out->seed = static_cast<uint64_t>(v->as_int());
  return true;
}

bool read_sampling(const JsonValue& body, bool chat, SamplingOptions* out, RequestError* error) {
  if (!read_number(body, "temperature", 0.0, 2.0, &out->temperature, error)) return false;
  if (!read_number(body, "top_p", 0.0, 1.0, &out->top_p, error)) return false;
  if (field(body, "top_p") != nullptr && out->top_p <= 0.0) return refuse(error, "top_p", "top_p must be above 0");
  if (!read_seed(body, out, error)) return false;
  // Chat's newer name for the bound wins when both are given; completions default to OpenAI's 16 tokens.
  if (!chat) out->max_tokens = 16;
  if (!read_max_tokens(body, "max_tokens", &out->max_tokens, error)) return false;
  if (chat && !read_max_tokens(body, "max_completion_tokens", &out->max_tokens, error)) return false;
  return read_stop(body, &out->stop, error);
}

// Options that would change the answer and that Ember does not implement: refused by name.
bool refuse_unsupported(const JsonValue& body, RequestError* error) {
  const JsonValue* n = field(body, "n");
  if (n != nullptr && !(n->is_integer() && n->as_int() == 1)) return refuse(error, "n", "only n = 1 is supported");
  const JsonValue* best_of = field(body, "best_of");
  if (best_of != nullptr && !(best_of->is_integer() && best_of->as_int() == 1)) {
    return refuse(error, "best_of", "only best_of = 1 is supported");
  }
  for (const char* name : {"logprobs", "echo", "top_logprobs"}) {
    const JsonValue* v = field(body, name);
    const bool off = v == nullptr || (v->is_bool() && !v->as_bool());
    if (!off) return refuse(error, name, std::string(name) + " is not supported");
  }
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    const JsonValue* v = field(body, name);
    if (v != nullptr && !(v->is_number() && v->as_double() == 0.0)) {
      return refuse(error, name, std::string(name) + " is not supported (only 0)");
    }
  }
  for (const char* name : {"logit_bias", "suffix"}) {
    const JsonValue* v = field(body, name);
    const bool empty =
        v == nullptr || (v->is_object() && v->members().empty()) || (v->is_string() && v->as_string().empty());
    if (!empty) return refuse(error, name, std::string(name) + " is not supported");
  }
  return true;
}

// A completion's prompt: a string, one string in an array, or token ids (an array of integers).
bool read_prompt(const JsonValue& body, GenerationRequest* out, RequestError* error) {
  const JsonValue* v = field(body, "prompt");
  if (v == nullptr) return refuse(error, "prompt", "prompt is required");
  if (v->is_string()) {
    out->prompt = v->as_string();
    return true;
  }
  if (v->is_array() && v->items().size() == 1 && v->items()[0].is_string()) {
    out->prompt = v->items()[0].as_string();
    return true;
  }
  if (v->is_array() && !v->items().empty() && v->items()[0].is_number()) {
    for (const JsonValue& id : v->items()) {
      if (!id.is_integer() || id.as_int() < 0 || id.as_int() > INT32_MAX) {
        return refuse(error, "prompt", "a prompt of token ids must hold integers >= 0");
      }
      out->prompt_ids.push_back(static_cast<int32_t>(id.as_int()));
    }
    return true;
  }
  return refuse(error, "prompt", "prompt must be a string, an array of one string, or an array of token ids");
}

// A message's content: a string, or text parts ({"type": "text", "text": ...}) joined as OpenAI's API does.
bool read_content(const JsonValue& content, size_t index, std::string* out, RequestError* error) {
  if (content.is_string()) {
    *out = content.as_string();
    return true;
  }
  if (content.is_null()) return true;  // an assistant message that only called tools
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (!content.is_array()) return refuse(error, "messages", where + " must be a string or an array of text parts");
  for (size_t k = 0; k < content.items().size(); ++k) {
    const JsonValue& part = content.items()[k];
    const JsonValue* type = part.is_object() ? part.find("type") : nullptr;
    const JsonValue* text = part.is_object() ? part.find("text") : nullptr;
    if (type == nullptr || !type->is_string() || type->as_string() != "text" || text == nullptr || !text->is_string()) {
      return refuse(error, "messages",
                    where + "[" + std::to_string(k) +
                        "]: only text parts ({\"type\": \"text\", \"text\": ...}) are supported");
    }
    *out += text->as_string();
  }
  return true;
}

// Each message checked, then written back with its content as one string and OpenAI's "developer" role as
// "system", the form chat templates read; the other fields (tool_calls, tool_call_id, name) pass through.
bool read_messages(const JsonValue& body, JsonValue* out, RequestError* error) {
  const JsonValue* v = field(body, "messages");
  if (v == nullptr || !v->is_array() || v->items().empty()) {
    return refuse(error, "messages", "messages must be a non-empty array");
  }
  JsonWriter w;
  w.begin_array();
  for (size_t i = 0; i < v->items().size(); ++i) {
    const JsonValue& m = v->items()[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    const JsonValue* role = m.is_object() ? m.find("role") : nullptr;
    if (!m.is_object()) return refuse(error, "messages", where + " must be an object, not " + m.kind_name());
    if (role == nullptr || !role->is_string()) return refuse(error, "messages", where + " needs a string 'role'");
    const std::string& r = role->as_string();
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool") {
      return refuse(error, "messages",
                    where + ".role '" + r + "' is not one of system, developer, user, assistant, tool");
    }
    std::string content;
    const JsonValue* c = m.find("content");
    if (c != nullptr && !read_content(*c, i, &content, error)) return false;
    w.begin_object().key("role").string(r == "developer" ? "system" : r).key("content").string(content);
    for (const auto& member : m.members()) {
      if (member.first != "role" && member.first != "content") w.key(member.first).raw(to_json(member.second));
    }
    w.end_object();
  }
  w.end_array();
  Result<JsonValue> parsed = parse_json(w.str());
  if (!parsed.ok()) return refuse(error, "messages", "messages could not be read back");
  *out = std::move(parsed.get());
  return true;
}

// response_format: text (nothing), json_object (any JSON object) or json_schema (its "schema").
bool read_response_format(const JsonValue& body, std::string* schema, RequestError* error) {
  const JsonValue* v = field(body, "response_format");
  if (v == nullptr) return true;
  const JsonValue* type = v->is_object() ? v->find("type") : nullptr;
  if (type == nullptr || !type->is_string()) {
    return refuse(error, "response_format", "response_format needs a 'type': text, json_object or json_schema");
  }
  if (type->as_string() == "text") return true;
  if (type->as_string() == "json_object") {
    *schema = R"({"type":"object","additionalProperties":true})";
    return true;
  }
  const JsonValue* spec = type->as_string() == "json_schema" ? v->find("json_schema") : nullptr;
  const JsonValue* s = spec != nullptr && spec->is_object() ? spec->find("schema") : nullptr;
  if (s == nullptr || !s->is_object()) {
    return refuse(error, "response_format",
                  type->as_string() == "json_schema"
                      ? "response_format.json_schema.schema must be an object"
                      : "response_format.type must be text, json_object or json_schema, not '" + type->as_string() +
                            "'");
  }
  *schema = to_json(*s);
  return true;
}

// One of tools: {"type": "function", "function": {"name": ..., "parameters": {...}}}; a refusal names the
// field at fault, e.g. tools[1].function.name.
bool read_tool(const JsonValue& t, size_t i, std::string* name, RequestError* error) {
  const std::string where = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) return refuse(error, "tools", where + " must be an object, not " + t.kind_name());
  const JsonValue* type = t.find("type");
  if (type == nullptr || !type->is_string() || type->as_string() != "function") {
    return refuse(error, "tools", where + ".type must be \"function\"");
  }
  const JsonValue* fn = t.find("function");
  if (fn == nullptr || !fn->is_object()) {
    return refuse(error, "tools", where + ".function must be an object {\"name\": ..., \"parameters\": {...}}");
  }
  const JsonValue* n = fn->find("name");
  if (n == nullptr || !n->is_string() || n->as_string().empty()) {
    return refuse(error, "tools", where + ".function.name must be a non-empty string");
  }
  const JsonValue* params = fn->find("parameters");
  if (params != nullptr && !params->is_object()) {
    return refuse(error, "tools",
                  where + ".function.parameters must be an object (a JSON Schema), not " + params->kind_name());
  }
  *name = n->as_string();
  return true;
}

// tools: [{"type": "function", "function": {"name": ..., "parameters": {...}}}]; tool_choice: "none", "auto"
// (the default with tools), "required", or {"type": "function", "function": {"name": ...}}.
bool read_tools(const JsonValue& body, GenerationRequest* out, RequestError* error) {
  const JsonValue* tools = field(body, "tools");
  const JsonValue* choice = field(body, "tool_choice");
  if (tools == nullptr) {
    if (choice != nullptr && !(choice->is_string() && choice->as_string() == "none")) {
      return refuse(error, "tool_choice", "tool_choice needs tools");
    }
    return true;
  }
  if (!tools->is_array()) return refuse(error, "tools", "tools must be an array");
  std::vector<std::string> names;
  for (size_t i = 0; i < tools->items().size(); ++i) {
    std::string name;
    if (!read_tool(tools->items()[i], i, &name, error)) return false;
    names.push_back(std::move(name));
  }
  out->tools = *tools;
  out->tool_choice = tools->items().empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (choice == nullptr) return true;
  if (choice->is_string() &&
      (choice->as_string() == "none" || choice->as_string() == "auto" || choice->as_string() == "required")) {
    const std::string& c = choice->as_string();
    out->tool_choice = c == "none" ? ToolChoice::kNone : c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
  } else {
    const JsonValue* fn = choice->is_object() ? choice->find("function") : nullptr;
    const JsonValue* name = fn != nullptr && fn->is_object() ? fn->find("name") : nullptr;
    if (name == nullptr || !name->is_string()) {
      return refuse(
          error, "tool_choice",
          "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    out->tool_choice = ToolChoice::kRequired;
    out->tool_name = name->as_string();
  }
  if (out->tool_choice == ToolChoice::kRequired && names.empty()) return refuse(error, "tool_choice", "no tools given");
  if (!out->tool_name.empty() && std::find(names.begin(), names.end(), out->tool_name) == names.end()) {
    return refuse(error, "tool_choice", "no tool named '" + out->tool_name + "'");
  }
  return true;
}

// The schema a required tool choice constrains the reply to: one call of one of the tools (or the named one).
std::string tool_call_schema(const GenerationRequest& r) {
  JsonWriter w;
  w.begin_object().key("anyOf").begin_array();
  for (const JsonValue& t : r.tools.items()) {
    const JsonValue& fn = *t.find("function");
    const std::string& name = fn.find("name")->as_string();
    if (!r.tool_name.empty() && name != r.tool_name) continue;
    const JsonValue* params = fn.find("parameters");
    w.begin_object().key("type").string("object").key("properties").begin_object();
    w.key("name").begin_object().key("const").string(name).end_object();
    w.key("arguments");
    if (params != nullptr) {
      w.raw(to_json(*params));
    } else {
      w.begin_object().key("type").string("object").end_object();
    }
    w.end_object().key("required").begin_array().string("name").string("arguments").end_array().end_object();
  }
  w.end_array().end_object();
  return w.str();
}

bool read_stream(const JsonValue& body, GenerationRequest* out, RequestError* error) {
  if (!read_bool(body, "stream", &out->stream, error)) return false;
  const JsonValue* options = field(body, "stream_options");
  if (options == nullptr) return true;
  if (!options->is_object()) return refuse(error, "stream_options", "stream_options must be an object");
  return read_bool(*options, "include_usage", &out->include_usage, error);
}

}  // namespace

RequestError schema_refusal(const GenerationRequest& r, const std::string& why) {
  // The compiler's refusals start with the JSON pointer of the schema part at fault ("/properties/x: ...").
  const size_t colon = why.find(": ");
  std::string pointer = !why.empty() && why[0] == '/' && colon != std::string::npos ? why.substr(0, colon) : "";
  const std::string what = pointer.empty() ? why : why.substr(colon + 2);
  if (pointer == "/") pointer.clear();
  RequestError e;
  if (r.tool_choice != ToolChoice::kRequired) {
    e.param = "response_format";
    e.message = "response_format.json_schema.schema" + pointer + ": " + what;
    return e;
  }
  // tool_call_schema's "/anyOf/K/properties/arguments/...": the K-th tool offered (or the named one).
  e.param = "tools";
  const std::string prefix = "/anyOf/";
  size_t k = 0, at = prefix.size();
  if (pointer.compare(0, prefix.size(), prefix) == 0) {
    while (at < pointer.size() && pointer[at] >= '0' && pointer[at] <= '9') k = k * 10 + (pointer[at++] - '0');
  }
  const std::string arguments = "/properties/arguments";
  const std::string rest = pointer.substr(at);
  size_t tool = k;
  if (!r.tool_name.empty()) {
    for (size_t i = 0; i < r.tools.items().size(); ++i) {
      if (r.tools.items()[i].find("function")->find("name")->as_string() == r.tool_name) tool = i;
    }
  }
  if (rest.compare(0, arguments.size(), arguments) == 0) {
    e.message = "tools[" + std::to_string(tool) + "].function.parameters" + rest.substr(arguments.size()) + ": " + what;
  } else {
    e.message = "tools (the required call's schema" + pointer + "): " + what;
  }
  return e;
}

bool parse_request(const std::string& body, bool chat, GenerationRequest* out, RequestError* error) {
  std::string parse_error;
  Result<JsonValue> json = parse_json(body, &parse_error);
  if (!json.ok()) return refuse(error, "", "the request body is not valid JSON: " + parse_error);
  if (!json->is_object()) return refuse(error, "", "the request body must be a JSON object");
  out->chat = chat;
  const JsonValue* model = field(*json, "model");
  if (model != nullptr && !model->is_string()) return refuse(error, "model", "model must be a string");
  if (model != nullptr) out->model = model->as_string();
  if (!refuse_unsupported(*json, error)) return false;
  if (!read_sampling(*json, chat, &out->sampling, error)) return false;
  if (!read_stream(*json, out, error)) return false;
  if (!chat) return read_prompt(*json, out, error);
  if (!read_messages(*json, &out->messages, error) || !read_tools(*json, out, error)) return false;
  if (!read_response_format(*json, &out->json_schema, error)) return false;
  if (out->tool_choice == ToolChoice::kRequired) {
    if (!out->json_schema.empty()) {
      return refuse(error, "response_format", "a required tool call and a response_format cannot both shape the reply");
    }
    out->json_schema = tool_call_schema(*out);
  }
  return true;
}

}  // namespace server
}  // namespace llm
}  // namespace ember
