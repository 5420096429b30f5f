#include "examples/llm/chat/chat_prompt.h"

namespace ember {
namespace llm {

Result<std::vector<int32_t>> encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                         const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                         int32_t bos_id, ChatTemplateError* error) {
  auto text = chat_template.render(messages, add_generation_prompt, error);
  if (!text.ok()) return text.error();
  auto ids = tokenizer.encode(text.get(), false, false);
  if (!ids.ok()) return ids.error();
  if (chat_template.is_plain() && bos_id >= 0) ids->insert(ids->begin(), bos_id);
  return ids;
}

}  // namespace llm
}  // namespace ember
