#include "examples/llm/server/engine.h"

#include <math.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "examples/llm/sampler.h"
#include "examples/llm/server/json_writer.h"
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

// A request without a seed still gets a generator of its own: distinct per request.
uint64_t fresh_seed() {
  static std::atomic<uint64_t> counter{0};
  const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return now ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull);
}

// How many leading tokens two sequences share.
size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  std::string tokenizer_error;
  Result<std::unique_ptr<Tokenizer>> tokenizer = load_tokenizer(options.tokenizer, &tokenizer_error);
  if (!tokenizer.ok()) {
    EMBER_LOG(ERROR, "tokenizer %s refused: %s", options.tokenizer, tokenizer_error.c_str());
    return tokenizer.error();
  }
  e->tokenizer_ = std::move(tokenizer.get());
  ChatTemplateError template_error;
  if (options.chat_template != nullptr) {
    Result<ChatTemplate> t = ChatTemplate::load_tokenizer_config(options.chat_template, &template_error);
    if (!t.ok()) {
      EMBER_LOG(ERROR, "chat template %s: %s", options.chat_template, template_error.describe().c_str());
      return t.error();
    }
    e->chat_template_.reset(new ChatTemplate(std::move(t.get())));
  } else {
    e->chat_template_.reset(new ChatTemplate(ChatTemplate::plain()));
  }
  EMBER_TRY_ASSIGN(program, DecoderProgram::load(options.model, options.threads, static_cast<int>(options.slots)));
  e->program_ = std::move(program);
  for (size_t s = 0; s < options.slots; ++s) {
    EMBER_TRY_ASSIGN(session, e->program_->new_session());  // a program exported before sessions has one
    e->sessions_.push_back(std::move(session));
  }
  e->kept_logits_.resize(options.slots);
  const DecoderMetadata& md = e->metadata();
  EMBER_CHECK_OR_RETURN_ERROR(static_cast<int64_t>(e->tokenizer_->vocab_size()) <= md.vocab_size, InvalidArgument,
                              "the tokenizer has %zu tokens but the model only %lld logits",
                              e->tokenizer_->vocab_size(), static_cast<long long>(md.vocab_size));
  e->eos_ids_ = md.eos_ids;
  if (e->eos_ids_.empty() && e->tokenizer_->eos_id() >= 0) e->eos_ids_.push_back(e->tokenizer_->eos_id());
  e->bos_id_ = md.bos_id >= 0 ? md.bos_id : e->tokenizer_->bos_id();
  EMBER_TRY_ASSIGN(vocabulary, TokenVocabulary::from_tokenizer(*e->tokenizer_, e->eos_ids_));
  e->vocabulary_ = std::move(vocabulary);
  // Forking a cached state needs sessions of their own: not for a program exported before them.
  if (options.prefix_cache > 0 && md.session_memory_id != 0) {
    e->prefix_cache_.reset(new PrefixCache(e->program_.get(), options.prefix_cache));
  }
  return e;
}

bool Engine::is_eos(int64_t id) const { return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end(); }

// The template's text for the messages (and the tools, which templates describe to the model), encoded; the
// plain format writes no BOS, so it goes in front. Where the system message's own rendering is a prefix of the
// prompt's ids, its length marks what the prefix cache may share.
bool Engine::chat_ids(const GenerationRequest& request, Prepared* out, RequestError* error) const {
  JsonValue extra;
  const JsonValue* extra_ptr = nullptr;
  if (request.tools.is_array() && !request.tools.items().empty()) {
    Result<JsonValue> parsed = parse_json("{\"tools\":" + to_json(request.tools) + "}");
    if (!parsed.ok()) return refuse(error, "tools", "tools could not be read back");
    extra = std::move(parsed.get());
    extra_ptr = &extra;
  }
  auto encode = [&](const JsonValue& messages, bool generation_prompt, std::vector<int64_t>* ids) {
    ChatTemplateError why;
    Result<std::string> text = chat_template_->render_json(messages, generation_prompt, extra_ptr, &why);
    if (!text.ok()) return refuse(error, "messages", "the chat template refused the messages: " + why.describe());
    Result<std::vector<int32_t>> encoded = tokenizer_->encode(*text, false, false);
    if (!encoded.ok()) return refuse(error, "messages", "the prompt could not be tokenized");
    if (chat_template_->is_plain() && bos_id_ >= 0) ids->push_back(bos_id_);
    ids->insert(ids->end(), encoded->begin(), encoded->end());
    return true;
  };
  if (!encode(request.messages, true, &out->ids)) return false;
  const JsonValue& first = request.messages.items()[0];
  if (prefix_cache_ && first.find("role")->as_string() == "system") {
    Result<JsonValue> system_only = parse_json("[" + to_json(first) + "]");
    std::vector<int64_t> system_ids;
    RequestError ignored;
    RequestError* saved = error;
    error = &ignored;  // a template that wants more than a system message just gets no shared prefix
    if (system_only.ok() && encode(*system_only, false, &system_ids) && system_ids.size() < out->ids.size() &&
        std::equal(system_ids.begin(), system_ids.end(), out->ids.begin())) {
      out->system_prefix = system_ids.size();
    }
    error = saved;
  }
  return true;
}

bool Engine::take_constraint(const GenerationRequest& request, Prepared* out, RequestError* error) {
  const std::string& schema = request.json_schema;
  out->schema = schema;
  {
    std::lock_guard<std::mutex> lock(grammar_mutex_);
    auto it = grammars_.find(schema);
    if (it != grammars_.end() && !it->second.empty()) {
      out->constraint = std::move(it->second.back());
      it->second.pop_back();
      out->constraint->reset();
      return true;
    }
  }
  std::string why;
  out->constraint = GrammarConstraint::load_json_schema(schema, *vocabulary_, &why);
  if (out->constraint == nullptr) {
    *error = schema_refusal(request, why);
    return false;
  }
  return true;
}

void Engine::release(Prepared& prepared) {
  if (prepared.constraint == nullptr) return;
  std::lock_guard<std::mutex> lock(grammar_mutex_);
  auto it = grammars_.find(prepared.schema);
  if (it == grammars_.end()) {
    if (grammars_.size() == kMaxSchemas) {
      grammars_.erase(grammar_order_.front());
      grammar_order_.pop_front();
    }
    it = grammars_.emplace(prepared.schema, std::vector<std::unique_ptr<GrammarConstraint>>()).first;
    grammar_order_.push_back(prepared.schema);
  }
  it->second.push_back(std::move(prepared.constraint));
}

bool Engine::prepare(const GenerationRequest& request, Prepared* out, RequestError* error) {
  const DecoderMetadata& md = metadata();
  const char* param = request.chat ? "messages" : "prompt";
  if (request.chat) {
    if (!chat_ids(request, out, error)) return false;
  } else if (!request.prompt_ids.empty()) {
    out->ids.assign(request.prompt_ids.begin(), request.prompt_ids.end());
  } else {
    Result<std::vector<int32_t>> encoded = tokenizer_->encode(request.prompt, false, false);
    if (!encoded.ok()) return refuse(error, param, "the prompt could not be tokenized");
    if (bos_id_ >= 0) out->ids.push_back(bos_id_);
    out->ids.insert(out->ids.end(), encoded->begin(), encoded->end());
  }
  if (out->ids.empty()) return refuse(error, param, "the prompt has no tokens");
  for (size_t i = 0; i < out->ids.size(); ++i) {
    if (out->ids[i] >= md.vocab_size) {
      return refuse(error, param,
                    "token " + std::to_string(out->ids[i]) + " at " + std::to_string(i) +
                        " is outside the vocabulary of " + std::to_string(md.vocab_size));
    }
  }
  const int64_t room = room_after(out->ids.size());
  const int64_t asked = request.sampling.max_tokens;
  if (room < 1 || (asked > 0 && asked > room)) {
    return refuse(error, asked > 0 && room >= 1 ? "max_tokens" : param,
                  "this model's context is " + std::to_string(md.max_seq_len) + " tokens; the prompt has " +
                      std::to_string(out->ids.size()) +
                      (asked > 0 ? " and " + std::to_string(asked) + " more were asked" : "") + " (at most " +
                      std::to_string(room > 0 ? room : 0) + " new tokens fit)");
  }
  return request.json_schema.empty() || take_constraint(request, out, error);
}

Result<const float*> Engine::prefill(size_t slot, const Prepared& prepared, size_t* cached) {
  const std::vector<int64_t>& ids = prepared.ids;
  // At least the last prompt token is fed, for its logits.
  const size_t common = std::min(common_prefix(sessions_[slot]->tokens(), ids), ids.size() - 1);
  if (prefix_cache_ && prepared.system_prefix > common) {
    std::lock_guard<std::mutex> lock(prefix_mutex_);
    const float* logits = nullptr;
    size_t reused = 0;
    EMBER_TRY_ASSIGN(started, prefix_cache_->start(ids.data(), ids.size(), &logits, &reused));
    sessions_[slot] = std::move(started);
    *cached = reused;
    const bool hit = reused >= prepared.system_prefix;
    ++(hit ? metrics_.prefix_cache_hits : metrics_.prefix_cache_misses);
    if (!hit) {
      // Not cached yet: this request's prefill stands, and the system prompt is prefilled again for the next
      // requests. That call reuses the program, so the logits are kept first.
      std::vector<float>& kept = kept_logits_[slot];
      kept.assign(logits, logits + static_cast<size_t>(metadata().vocab_size));
      EMBER_TRY(prefix_cache_->add(ids.data(), prepared.system_prefix));
      return kept.data();
    }
    return logits;
  }
  Session& session = *sessions_[slot];
  EMBER_TRY(session.rewind(common));
  *cached = common;
  return session.append(ids.data() + common, ids.size() - common);
}

Result<GenerationOutcome> Engine::generate(size_t slot, Prepared& prepared, const SamplingOptions& sampling,
                                           const std::function<bool(const std::string&)>& on_text) {
  const DecoderMetadata& md = metadata();
  const size_t vocab = static_cast<size_t>(md.vocab_size);
  GenerationOutcome outcome;
  outcome.prompt_tokens = prepared.ids.size();
  const int64_t limit = sampling.max_tokens > 0 ? sampling.max_tokens : room_after(prepared.ids.size());
  EMBER_TRY_ASSIGN(sampler, Sampler::create(static_cast<float>(sampling.temperature),
                                            sampling.has_seed ? sampling.seed : fresh_seed(),
                                            static_cast<float>(sampling.top_p)));
  GrammarConstraint* constraint = prepared.constraint.get();
  std::vector<uint32_t> mask(constraint != nullptr ? constraint->words() : 0);
  std::vector<float> masked(constraint != nullptr ? vocab : 0);
  Utf8Stream utf8;
  StopStrings stops(sampling.stop);
  EMBER_TRY_ASSIGN(logits, prefill(slot, prepared, &outcome.cached_tokens));
  metrics_.prompt_tokens += outcome.prompt_tokens;
  metrics_.cached_prompt_tokens += outcome.cached_tokens;

  // Each chosen token's text goes out once final; the token is fed back unless it is the last. At the end, text
  // held back (an unfinished character, the start of a stop sequence that never came) goes out too.
  auto finish = [&](const char* reason) {
    outcome.finish_reason = reason;
    const std::string tail = stops.push(utf8.finish()) + stops.finish();
    if (!tail.empty() && !on_text(tail)) outcome.finish_reason = "cancelled";
    return outcome;
  };
  int64_t prev = prepared.ids.back();
  for (int64_t produced = 0; produced < limit; ++produced) {
    const float* row = logits;
    if (constraint != nullptr) {
      // Only what the grammar allows next; EOS only where it can end.
      constraint->mask(mask.data());
      masked.resize(vocab);
      mask_logits(mask.data(), vocabulary_->size(), logits, vocab, masked.data());
      row = masked.data();
    }
    EMBER_TRY_ASSIGN(next, sampler.sample(row, vocab));
    if (constraint != nullptr && !constraint->accept(next))
      return finish("stop");  // nothing allowed: the grammar is spent
    if (is_eos(next)) return finish("stop");
    ++outcome.completion_tokens;
    ++metrics_.completion_tokens;
    Result<std::string> piece = tokenizer_->decode(static_cast<int32_t>(prev), next);
    const std::string text = stops.push(utf8.push(piece.ok() ? *piece : std::string()));
    if (!text.empty() && !on_text(text)) {
      outcome.finish_reason = "cancelled";
      return outcome;
    }
    if (stops.stopped()) return outcome;  // finish_reason "stop"; what followed the stop sequence is dropped
    if (constraint != nullptr && constraint->done()) return finish("stop");  // the value is complete
    prev = next;
    if (produced + 1 == limit) break;
    const int64_t token = next;
    EMBER_TRY_ASSIGN(after, sessions_[slot]->append(&token, 1));
    logits = after;
  }
  return finish("length");
}

}  // namespace server
}  // namespace llm
}  // namespace ember
