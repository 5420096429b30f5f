// What the server generates with: one decoder program per slot (each slot's KV cache and activations are its
// own, so slots generate at the same time without touching each other; the weights are one file mapped by each),
// the tokenizer, and the generation loop a request runs on the slot its lease names.
//
// Generation streams text through a callback: token bytes become whole UTF-8 characters (utf8_stream.h), stop
// sequences are cut (stop_strings.h), and the callback's false (the client went away) ends it at once.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "examples/llm/decoder_program.h"
#include "examples/llm/server/request.h"
#include "examples/llm/tokenizer/tokenizer.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {
namespace server {

struct EngineOptions {
  const char* model = nullptr;
  const char* tokenizer = nullptr;
  size_t slots = 4;
  int threads = 1;  // per slot
};

class Engine {
 public:
  // Loads the tokenizer and `slots` copies of the program; the log says what was refused.
  static Result<std::unique_ptr<Engine>> load(const EngineOptions& options);

  // The request's prompt as token ids (a chat's messages rendered first), checked against the vocabulary and the
  // context: false with *error filled (HTTP 400, the parameter at fault) when it cannot be generated from.
  bool prompt_ids(const GenerationRequest& request, std::vector<int64_t>* ids, RequestError* error) const;

  // Generates on `slot` from `ids` (checked by prompt_ids). on_text gets each piece of text as it becomes final;
  // its false cancels. An Error when the program fails (logged).
  Result<GenerationOutcome> generate(size_t slot, const std::vector<int64_t>& ids, const SamplingOptions& sampling,
                                     const std::function<bool(const std::string&)>& on_text);

  const DecoderMetadata& metadata() const { return programs_[0]->metadata(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  size_t slots() const { return programs_.size(); }

 private:
  Engine() = default;
  // The most new tokens a prompt of `n` ids leaves room for (the last new token is not fed back).
  int64_t room_after(size_t n) const { return metadata().max_seq_len - static_cast<int64_t>(n) + 1; }
  bool is_eos(int64_t id) const;

  std::vector<std::unique_ptr<DecoderProgram>> programs_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int64_t> eos_ids_;
};

// A chat's messages as one prompt, for a model without a chat template: each message as "<role>: <content>" on
// its own lines, then "assistant:" for the reply.
std::string default_chat_prompt(const std::vector<ChatMessage>& messages);

}  // namespace server
}  // namespace llm
}  // namespace ember
