// What the server generates with: one decoder program whose forward is loaded once per slot (the weights mapped
// once), one session per slot that requests reuse, the tokenizer, the chat template, and the grammars requests
// constrain their output with.
//
// A request's session keeps the tokens its slot last held up to where the new prompt differs from them, so a
// conversation that comes back to the same slot prefills only its new turn; a system prompt shared across slots
// is prefilled once into the prefix cache, and a request that starts with it forks that state. Generation
// streams text through a callback: token bytes become whole UTF-8 characters (utf8_stream.h), stop sequences are
// cut (stop_strings.h), and the callback's false (the client went away) ends it at once.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "examples/llm/chat/chat_template.h"
#include "examples/llm/decoder_program.h"
#include "examples/llm/grammar/constraint.h"
#include "examples/llm/prefix_cache.h"
#include "examples/llm/server/metrics.h"
#include "examples/llm/server/request.h"
#include "examples/llm/session.h"
#include "examples/llm/tokenizer/tokenizer.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {
namespace server {

struct EngineOptions {
  const char* model = nullptr;
  const char* tokenizer = nullptr;
  const char* chat_template = nullptr;  // a tokenizer_config.json; none: the plain default format
  size_t slots = 4;
  int threads = 1;  // per slot
  size_t prefix_cache = 4;  // system prompts kept; 0: none
};

// A request ready to run: its prompt ids, where its system prompt ends (0: none), and its grammar, held by this
// request until Engine::release hands it back for the next request with the same schema.
struct Prepared {
  std::vector<int64_t> ids;
  size_t system_prefix = 0;
  std::string schema;
  std::unique_ptr<GrammarConstraint> constraint;
};

class Engine {
 public:
  // Loads the tokenizer, the chat template and the program with `slots` slots; the log says what was refused.
  static Result<std::unique_ptr<Engine>> load(const EngineOptions& options);

  // The request's prompt as token ids (a chat's messages rendered by the template, with its tools) and its grammar;
  // false with *error filled (HTTP 400, the parameter at fault) when it cannot be generated from.
  bool prepare(const GenerationRequest& request, Prepared* out, RequestError* error);
  // Generates on `slot`. on_text gets each piece of text as it becomes final; its false cancels. An Error when the
  // program fails (logged).
  Result<GenerationOutcome> generate(size_t slot, Prepared& prepared, const SamplingOptions& sampling,
                                     const std::function<bool(const std::string&)>& on_text);
  // Hands the request's grammar back for reuse (its mask caches depend on the grammar only).
  void release(Prepared& prepared);

  const DecoderMetadata& metadata() const { return program_->metadata(); }
  const DecoderMemory& memory() const { return program_->memory(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  size_t slots() const { return sessions_.size(); }
  Metrics& metrics() { return metrics_; }

 private:
  Engine() = default;
  // The most new tokens a prompt of `n` ids leaves room for (the last new token is not fed back).
  int64_t room_after(size_t n) const { return metadata().max_seq_len - static_cast<int64_t>(n) + 1; }
  bool is_eos(int64_t id) const;
  bool chat_ids(const GenerationRequest& request, Prepared* out, RequestError* error) const;
  bool take_constraint(const GenerationRequest& request, Prepared* out, RequestError* error);
  // Brings the slot's session to the prompt and returns the last position's logits; *cached: the prompt tokens
  // that were not fed (kept in the session or taken from the prefix cache).
  Result<const float*> prefill(size_t slot, const Prepared& prepared, size_t* cached);

  std::unique_ptr<DecoderProgram> program_;
  std::vector<std::unique_ptr<Session>> sessions_;  // one per slot
  std::vector<std::vector<float>> kept_logits_;      // per slot: logits that must outlive a prefix-cache prefill
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  std::unique_ptr<TokenVocabulary> vocabulary_;
  std::vector<int64_t> eos_ids_;
  int64_t bos_id_ = -1;

  Metrics metrics_;
  std::mutex prefix_mutex_;
  std::unique_ptr<PrefixCache> prefix_cache_;

  // Compiled grammars by schema text, each copy used by one request at a time; the oldest schema is dropped past
  // kMaxSchemas.
  static constexpr size_t kMaxSchemas = 16;
  std::mutex grammar_mutex_;
  std::map<std::string, std::vector<std::unique_ptr<GrammarConstraint>>> grammars_;
  std::deque<std::string> grammar_order_;
};

}  // namespace server
}  // namespace llm
}  // namespace ember
