#include "examples/llm/server/engine.h"

#include <atomic>
#include <chrono>

#include "examples/llm/sampler.h"
#include "examples/llm/server/stop_strings.h"
#include "examples/llm/server/utf8_stream.h"
#include "runtime/core/log.h"

namespace ember {
namespace llm {
namespace server {

namespace {

bool refuse(RequestError* error, const char* param, std::string message) {
  error->param = param;
  error->message = std::move(message);
  return false;
}

// A request without a seed still gets a reproducible generator of its own: distinct per request.
uint64_t fresh_seed() {
  static std::atomic<uint64_t> counter{0};
  const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return now ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull);
}

}  // namespace

std::string default_chat_prompt(const std::vector<ChatMessage>& messages) {
  std::string prompt;
  for (const ChatMessage& m : messages) prompt += m.role + ": " + m.content + "\n";
  return prompt + "assistant:";
}

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& options) {
  std::unique_ptr<Engine> engine(new Engine());
  Result<std::unique_ptr<Tokenizer>> tokenizer = load_tokenizer(options.tokenizer);
  if (!tokenizer.ok()) return tokenizer.error();
  engine->tokenizer_ = std::move(tokenizer.get());
  for (size_t s = 0; s < options.slots; ++s) {
    Result<std::unique_ptr<DecoderProgram>> program = DecoderProgram::load(options.model, options.threads);
    if (!program.ok()) return program.error();
    engine->programs_.push_back(std::move(program.get()));
  }
  const DecoderMetadata& md = engine->metadata();
  EMBER_CHECK_OR_RETURN_ERROR(static_cast<int64_t>(engine->tokenizer_->vocab_size()) <= md.vocab_size, InvalidArgument,
                              "the tokenizer has %zu tokens but the model only %lld logits",
                              engine->tokenizer_->vocab_size(), static_cast<long long>(md.vocab_size));
  engine->eos_ids_ = md.eos_ids;
  if (engine->eos_ids_.empty() && engine->tokenizer_->eos_id() >= 0)
    engine->eos_ids_.push_back(engine->tokenizer_->eos_id());
  return engine;
}

bool Engine::is_eos(int64_t id) const {
  for (int64_t e : eos_ids_) {
    if (e == id) return true;
  }
  return false;
}

bool Engine::prompt_ids(const GenerationRequest& request, std::vector<int64_t>* ids, RequestError* error) const {
  const DecoderMetadata& md = metadata();
  const char* param = request.chat ? "messages" : "prompt";
  if (!request.chat && !request.prompt_ids.empty()) {
    ids->assign(request.prompt_ids.begin(), request.prompt_ids.end());
  } else {
    const std::string text = request.chat ? default_chat_prompt(request.messages) : request.prompt;
    Result<std::vector<int32_t>> encoded = tokenizer_->encode(text, false, false);
    if (!encoded.ok()) return refuse(error, param, "the prompt could not be tokenized");
    const int64_t bos = md.bos_id >= 0 ? md.bos_id : tokenizer_->bos_id();
    if (bos >= 0) ids->push_back(bos);
    ids->insert(ids->end(), encoded->begin(), encoded->end());
  }
  if (ids->empty()) return refuse(error, param, "the prompt has no tokens");
  for (size_t i = 0; i < ids->size(); ++i) {
    if ((*ids)[i] >= md.vocab_size) {
      return refuse(error, param,
                    "token " + std::to_string((*ids)[i]) + " at " + std::to_string(i) +
                        " is outside the vocabulary of " + std::to_string(md.vocab_size));
    }
  }
  const int64_t room = room_after(ids->size());
  const int64_t asked = request.sampling.max_tokens;
  if (room < 1 || (asked > 0 && asked > room)) {
    return refuse(error, asked > 0 && room >= 1 ? "max_tokens" : param,
                  "this model's context is " + std::to_string(md.max_seq_len) + " tokens; the prompt has " +
                      std::to_string(ids->size()) +
                      (asked > 0 ? " and " + std::to_string(asked) + " more were asked" : "") + " (at most " +
                      std::to_string(room > 0 ? room : 0) + " new tokens fit)");
  }
  return true;
}

Result<GenerationOutcome> Engine::generate(size_t slot, const std::vector<int64_t>& ids,
                                           const SamplingOptions& sampling,
                                           const std::function<bool(const std::string&)>& on_text) {
  DecoderProgram& program = *programs_[slot];
  const DecoderMetadata& md = program.metadata();
  GenerationOutcome outcome;
  outcome.prompt_tokens = ids.size();
  const int64_t limit = sampling.max_tokens > 0 ? sampling.max_tokens : room_after(ids.size());
  EMBER_TRY_ASSIGN(sampler, Sampler::create(static_cast<float>(sampling.temperature),
                                            sampling.has_seed ? sampling.seed : fresh_seed(),
                                            static_cast<float>(sampling.top_p)));
  Utf8Stream utf8;
  StopStrings stops(sampling.stop);
  bool failed_in_execute = false;

  // Prefill: the whole prompt in one call (a token per call when the program takes one).
  const float* logits = nullptr;
  auto forward = [&](const int64_t* tokens, size_t n, int64_t pos) {
    Result<const float*> out = program.forward(tokens, n, pos, &failed_in_execute);
    if (!out.ok()) return out.error();
    logits = *out;
    return Error::Ok;
  };
  if (md.dynamic_shape) {
    EMBER_TRY(forward(ids.data(), ids.size(), 0));
  } else {
    for (size_t i = 0; i < ids.size(); ++i) EMBER_TRY(forward(&ids[i], 1, static_cast<int64_t>(i)));
  }

  // Decode: each chosen token's text goes out once final; the token is fed back unless it is the last. At the
  // end, text held back (an unfinished character, the start of a stop sequence that never came) goes out too.
  auto finish = [&](const char* reason) {
    outcome.finish_reason = reason;
    const std::string tail = stops.push(utf8.finish()) + stops.finish();
    if (!tail.empty() && !on_text(tail)) outcome.finish_reason = "cancelled";
    return outcome;
  };
  int64_t prev = ids.back();
  for (int64_t produced = 0; produced < limit; ++produced) {
    EMBER_TRY_ASSIGN(next, sampler.sample(logits, static_cast<size_t>(md.vocab_size)));
    if (is_eos(next)) return finish("stop");
    ++outcome.completion_tokens;
    Result<std::string> piece = tokenizer_->decode(static_cast<int32_t>(prev), next);
    const std::string text = stops.push(utf8.push(piece.ok() ? *piece : std::string()));
    if (!text.empty() && !on_text(text)) {
      outcome.finish_reason = "cancelled";
      return outcome;
    }
    if (stops.stopped()) return outcome;  // finish_reason "stop"; what followed the stop sequence is dropped
    prev = next;
    if (produced + 1 == limit) break;
    const int64_t token = next;
    EMBER_TRY(forward(&token, 1, static_cast<int64_t>(ids.size()) + produced));
  }
  return finish("length");
}

}  // namespace server
}  // namespace llm
}  // namespace ember
