#include "examples/llm/chat/chat_template.h"

#include <stdio.h>

#include "examples/llm/chat/parser.h"
#include "runtime/core/log.h"

namespace ember {
namespace llm {

const char kPlainChatTemplate[] =
    "{% for message in messages %}{{ message['role'] | capitalize }}: {{ message['content'] | trim }}\n\n"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}";

namespace {

const char* const kSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                      "pad_token", "cls_token", "mask_token"};

Error refuse(ChatTemplateError* error, ChatTemplateError e) {
  EMBER_LOG(ERROR, "chat template: %s", e.describe().c_str());
  if (error != nullptr) *error = std::move(e);
  return Error::InvalidArgument;
}

ChatTemplateError from(const chat::TemplateError& e) {
  ChatTemplateError out;
  out.message = e.message;
  out.line = e.where.line;
  out.column = e.where.column;
  out.raised = e.raised;
  return out;
}

ChatTemplateError plain_error(std::string message) {
  ChatTemplateError e;
  e.message = std::move(message);
  return e;
}

// transformers' message clean-up before rendering: null fields dropped (templates test for missing keys), and a
// message's reasoning under any of its names also given as `thinking` (first) and `reasoning_content` (last).
chat::Value clean_message(const chat::Value& m) {
  if (!m.is_dict()) return m;
  chat::ValueDict members;
  for (const auto& f : m.members()) {
    if (!f.second.is_none()) members.push_back(f);
  }
  const chat::Value* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    for (const auto& f : members) {
      if (reasoning == nullptr && f.first == key) reasoning = &f.second;
    }
  }
  if (reasoning == nullptr) return chat::Value::dict(std::move(members));
  const chat::Value r = *reasoning;
  chat::ValueDict aliased = {{"thinking", r}};
  for (const auto& f : members) {
    if (f.first == "thinking") continue;
    aliased.push_back(f);
  }
  bool has_content = false;
  for (auto& f : aliased) {
    if (f.first == "reasoning_content") f.second = r, has_content = true;
  }
  if (!has_content) aliased.emplace_back("reasoning_content", r);
  return chat::Value::dict(std::move(aliased));
}

}  // namespace

std::string ChatTemplateError::describe() const {
  if (line == 0) return message;
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, ChatTemplateError* error) {
  auto body = std::make_shared<chat::Body>();
  chat::TemplateError e;
  if (!chat::parse_template(source, body.get(), &e)) return refuse(error, from(e));
  ChatTemplate t;
  t.body_ = std::move(body);
  t.source_ = std::string(source);
  return t;
}

ChatTemplate ChatTemplate::plain() {
  auto t = parse(kPlainChatTemplate);
  ChatTemplate out = std::move(t.get());
  out.plain_ = true;
  return out;
}

Result<ChatTemplate> ChatTemplate::from_tokenizer_config(std::string_view json, ChatTemplateError* error) {
  auto config = parse_json(json);
  if (!config.ok()) return refuse(error, plain_error("tokenizer_config.json is not valid JSON"));
  if (!config->is_object()) return refuse(error, plain_error("tokenizer_config.json is not a JSON object"));
  const JsonValue* source = config->find("chat_template");
  if (source != nullptr && source->is_array()) {
    // Several named templates: the one named "default".
    const JsonValue* chosen = nullptr;
    for (const JsonValue& entry : source->items()) {
      const JsonValue* name = entry.find("name");
      if (name != nullptr && name->is_string() && name->as_string() == "default") chosen = entry.find("template");
    }
    if (chosen == nullptr) return refuse(error, plain_error("chat_template lists no template named \"default\""));
    source = chosen;
  }
  ChatTemplate t;
  if (source == nullptr || source->is_null()) {
    t = plain();
  } else if (!source->is_string()) {
    return refuse(error, plain_error("chat_template is neither a string nor a list of named templates"));
  } else {
    auto parsed = parse(source->as_string(), error);
    if (!parsed.ok()) return parsed.error();
    t = std::move(parsed.get());
  }
  for (const char* name : kSpecialTokens) {
    const JsonValue* token = config->find(name);
    if (token != nullptr && token->is_object()) token = token->find("content");
    if (token != nullptr && token->is_string()) t.set_variable(name, token->as_string());
  }
  return t;
}

Result<ChatTemplate> ChatTemplate::load_tokenizer_config(const std::string& path, ChatTemplateError* error) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return refuse(error, plain_error(path + ": cannot open"));
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  fclose(f);
  return from_tokenizer_config(text, error);
}

void ChatTemplate::set_variable(const std::string& name, const std::string& value) {
  for (auto& v : variables_) {
    if (v.first == name) {
      v.second = chat::Value::string(value);
      return;
    }
  }
  variables_.emplace_back(name, chat::Value::string(value));
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                         ChatTemplateError* error) const {
  chat::ValueList list;
  for (const ChatMessage& m : messages) {
    list.push_back(
        chat::Value::dict({{"role", chat::Value::string(m.role)}, {"content", chat::Value::string(m.content)}}));
  }
  return render_values(chat::Value::list(std::move(list)), add_generation_prompt, nullptr, error);
}

Result<std::string> ChatTemplate::render_json(const JsonValue& messages, bool add_generation_prompt,
                                              const JsonValue* extra, ChatTemplateError* error) const {
  if (!messages.is_array()) return refuse(error, plain_error("messages must be a JSON array"));
  chat::ValueList list;
  for (const JsonValue& m : messages.items()) {
    if (!m.is_object()) return refuse(error, plain_error("each message must be a JSON object"));
    list.push_back(clean_message(chat::Value::from_json(m)));
  }
  if (extra != nullptr && !extra->is_object())
    return refuse(error, plain_error("extra variables must be a JSON object"));
  return render_values(chat::Value::list(std::move(list)), add_generation_prompt, extra, error);
}

Result<std::string> ChatTemplate::render_values(chat::Value messages, bool add_generation_prompt,
                                                const JsonValue* extra, ChatTemplateError* error) const {
  // What transformers passes: the special tokens, then the caller's variables over them, then messages, tools,
  // documents and add_generation_prompt.
  chat::ValueDict vars = variables_;
  auto put = [&vars](const std::string& name, chat::Value v) {
    for (auto& entry : vars) {
      if (entry.first == name) {
        entry.second = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  };
  put("tools", chat::Value::none());
  put("documents", chat::Value::none());
  if (extra != nullptr) {
    for (const auto& m : extra->members()) put(m.first, chat::Value::from_json(m.second));
  }
  put("messages", std::move(messages));
  put("add_generation_prompt", chat::Value::boolean(add_generation_prompt));
  std::string out;
  chat::TemplateError e;
  if (!chat::render_template(*body_, vars, limits_, &out, &e)) return refuse(error, from(e));
  return out;
}

}  // namespace llm
}  // namespace ember
