// A conversation to prompt token ids: the chat template's text, encoded by the model's tokenizer. This is what a
// chat front end (llm_runner, a server) feeds to prefill.
#pragma once

#include <stdint.h>

#include <vector>

#include "examples/llm/chat/chat_template.h"
#include "examples/llm/tokenizer/tokenizer.h"

namespace ember {
namespace llm {

// Renders `messages` and encodes the text as transformers' apply_chat_template(tokenize=True) does: no special
// tokens added, since a model's template writes its own BOS and turn markers (the tokenizer matches them in the
// text as added tokens). The plain default format writes none, so `bos_id` (the program's, else the tokenizer's;
// < 0 for none) is put in front of it, as for a plain prompt.
Result<std::vector<int32_t>> encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                         const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                         int32_t bos_id, ChatTemplateError* error = nullptr);

}  // namespace llm
}  // namespace ember
