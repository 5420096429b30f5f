// Chat templates: a conversation (role/content messages) to the prompt text a chat model was trained on, from the
// Jinja template in its tokenizer_config.json (`chat_template`), rendered as transformers' apply_chat_template
// renders it. The text then goes to the tokenizer, encoded without adding BOS: templates write their own
// (`{{ bos_token }}`), as transformers encodes with add_special_tokens=False.
//
//   auto t = ChatTemplate::load_tokenizer_config("tokenizer_config.json");   // or ChatTemplate::plain()
//   auto text = t->render({{"system", "Be brief."}, {"user", "Hi!"}}, /*add_generation_prompt=*/true);
//
// A model without a template gets ChatTemplate::plain() (README.md: "Chat templates"). Templates are untrusted
// input: errors carry a message with line and column, and rendering is bounded in output bytes and steps.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "examples/llm/chat/evaluator.h"
#include "examples/llm/tokenizer/json.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatTemplateError {
  std::string message;
  uint32_t line = 0;  // 0 when the error has no place in the template (e.g. malformed messages JSON)
  uint32_t column = 0;
  bool raised = false;  // the template refused the conversation with raise_exception(message)

  // "line L, column C: message" (or the message alone without a place).
  std::string describe() const;
};

class ChatTemplate {
 public:
  // Parses template text (as tokenizer_config.json's chat_template holds it).
  static Result<ChatTemplate> parse(std::string_view source, ChatTemplateError* error = nullptr);
  // The plain format for models without a template (kPlainChatTemplate).
  static ChatTemplate plain();
  // From tokenizer_config.json's text: its chat_template (a string, or a list of {"name", "template"} whose
  // "default" entry is used) and its special tokens (bos_token, eos_token, unk_token, sep_token, pad_token,
  // cls_token, mask_token: strings or {"content": ...} objects). No chat_template: plain().
  static Result<ChatTemplate> from_tokenizer_config(std::string_view json, ChatTemplateError* error = nullptr);
  static Result<ChatTemplate> load_tokenizer_config(const std::string& path, ChatTemplateError* error = nullptr);

  // A variable every rendering sees (special tokens, or e.g. date_string); a later call replaces the value.
  void set_variable(const std::string& name, const std::string& value);
  void set_limits(const chat::RenderLimits& limits) { limits_ = limits; }

  Result<std::string> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             ChatTemplateError* error = nullptr) const;
  // The full form: `messages` a JSON array of message objects (tool_calls and other fields included), `extra` a
  // JSON object of further variables (tools, documents, date_string, ...) or nullptr. As transformers does, a
  // message's null fields are dropped, and `tools` and `documents` are none unless given.
  Result<std::string> render_json(const JsonValue& messages, bool add_generation_prompt, const JsonValue* extra,
                                  ChatTemplateError* error = nullptr) const;

  bool is_plain() const { return plain_; }
  const std::string& source() const { return source_; }

 private:
  Result<std::string> render_values(chat::Value messages, bool add_generation_prompt, const JsonValue* extra,
                                    ChatTemplateError* error) const;

  std::shared_ptr<const chat::Body> body_;
  std::string source_;
  chat::ValueDict variables_;
  chat::RenderLimits limits_;
  bool plain_ = false;
};

// The default format: each message as "<Role>: <content>" (role capitalized, content trimmed) followed by a blank
// line, then "Assistant:" when a generation prompt is asked for. No special tokens: the caller adds BOS as for a
// plain prompt.
extern const char kPlainChatTemplate[];

}  // namespace llm
}  // namespace ember
