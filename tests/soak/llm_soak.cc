#include "tests/soak/llm_soak.h"

#include <ember/ember.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "examples/llm/decoder_program.h"
#include "tests/soak/seeded_random.h"

namespace ember {
namespace soak {
namespace {

using llm::DecoderProgram;
using llm::Session;
using llm::SessionOptions;

bool ok(Error e, const char* what, const char* path, uint64_t step) {
  if (e == Error::Ok) return true;
  fprintf(stderr, "soak: %s: decode step %llu: %s: %s (%s)\n", path, (unsigned long long)step, what, error_name(e),
          ember_last_error());
  return false;
}

int64_t argmax(const float* logits, int64_t vocab) {
  return static_cast<int64_t>(std::max_element(logits, logits + vocab) - logits);
}

// The tokens a user turn or a system prompt holds: anything but the special ids below 3.
std::vector<int64_t> draw_tokens(SeededRandom* random, int64_t vocab, size_t n) {
  std::vector<int64_t> tokens(n);
  for (int64_t& t : tokens) t = 3 + static_cast<int64_t>(random->below(static_cast<uint64_t>(vocab - 3)));
  return tokens;
}

// The fixed conversation a fresh session replays: its greedy answer and the last step's logits.
struct Replay {
  std::vector<int64_t> answer;
  std::vector<float> logits;
};

class LlmSoak {
 public:
  static constexpr int kReplayAnswer = 16;

  LlmSoak(const LlmOptions& options, DecoderProgram* program, SampleSeries* series)
      : options_(options), program_(program), series_(series), random_(options.seed) {
    vocab_ = program->metadata().vocab_size;
    const std::vector<int64_t>& eos = program->metadata().eos_ids;
    eos_.assign(eos.begin(), eos.end());
    system_prompt_ = draw_tokens(&random_, vocab_, 6);
    reference_turn_ = draw_tokens(&random_, vocab_, 8);
  }

  bool run() {
    if (!replay(&reference_)) return false;
    SessionOptions chat_options;
    chat_options.context_full = SessionOptions::ContextFull::kSlidingWindow;
    auto chat = program_->new_session(chat_options);
    if (!ok(chat.ok() ? Error::Ok : chat.error(), "new session", options_.path, 0)) return false;
    session_ = chat->get();
    if (!new_chat()) return false;
    for (uint64_t turn = 0; steps_ < options_.steps; ++turn) {
      if (turn % 11 == 10) {
        ++chats_;
        if (!new_chat()) return false;
      }
      if (!user_turn()) return false;
      const size_t answer_start = session_->position(), slides = session_->slides();
      if (!answer()) return false;
      // A regenerated answer: from where the user's tokens ended, when no slide has moved them since.
      if (turn % 5 == 4 && session_->slides() == slides && answer_start <= session_->position()) {
        // (It starts from the last greedy choice: a regenerated answer differs from the first, as a sampled one would.)
        if (!ok(session_->rewind(answer_start), "rewind", options_.path, steps_) || !answer()) return false;
      }
    }
    slides_ = session_->slides();  // counted over the session's life, rewinds included
    session_ = nullptr;
    return true;
  }

  uint64_t steps() const { return steps_; }
  // What the chat did: windows slid, chats started, replays checked.
  std::string note() const {
    char text[160];
    snprintf(text, sizeof(text), "%zu window slides, %zu chats, %zu reference replays checked", slides_, chats_ + 1,
             replays_);
    return text;
  }

 private:
  bool new_chat() {
    return ok(session_->rewind(0), "rewind to a new chat", options_.path, steps_) &&
           append(session_, system_prompt_.data(), system_prompt_.size(), "system prompt");
  }

  bool user_turn() {
    const std::vector<int64_t> tokens = draw_tokens(&random_, vocab_, 3 + random_.below(8));
    return append(session_, tokens.data(), tokens.size(), "user turn");
  }

  // Greedy decode steps until an EOS token or the drawn length; each one is a step of the soak.
  bool answer() {
    const uint64_t length = 8 + random_.below(33);
    for (uint64_t i = 0; i < length && steps_ < options_.steps; ++i) {
      const int64_t next = next_;
      if (!append(session_, &next, 1, "decode")) return false;
      ++steps_;
      if (steps_ % options_.sample_every == 0 && !series_->take(steps_)) return false;
      if (steps_ % options_.check_every == 0 && !check_replay()) return false;
      if (std::find(eos_.begin(), eos_.end(), next) != eos_.end()) break;
    }
    return true;
  }

  // The chat's append: its next token is the greedy choice from the logits this returns.
  bool append(Session* session, const int64_t* tokens, size_t n, const char* what) {
    const float* logits = nullptr;
    if (!append_to(session, tokens, n, what, &logits)) return false;
    next_ = argmax(logits, vocab_);
    return true;
  }

  bool append_to(Session* session, const int64_t* tokens, size_t n, const char* what, const float** logits) {
    Result<const float*> result = session->append(tokens, n);
    if (!ok(result.ok() ? Error::Ok : result.error(), what, options_.path, steps_)) return false;
    *logits = *result;
    return true;
  }

  // A fresh session: the system prompt, the reference turn, then a greedy answer of fixed length. Its logits
  // are its own; the chat's next token was taken before.
  bool replay(Replay* out) {
    auto fresh = program_->new_session();
    if (!ok(fresh.ok() ? Error::Ok : fresh.error(), "new session (replay)", options_.path, steps_)) return false;
    Session* s = fresh->get();
    const float* logits = nullptr;
    bool good = append_to(s, system_prompt_.data(), system_prompt_.size(), "replay system prompt", &logits) &&
                append_to(s, reference_turn_.data(), reference_turn_.size(), "replay turn", &logits);
    for (int i = 0; good && i < kReplayAnswer; ++i) {
      const int64_t next = argmax(logits, vocab_);
      out->answer.push_back(next);
      good = append_to(s, &next, 1, "replay decode", &logits);
    }
    if (good) out->logits.assign(logits, logits + vocab_);
    return good;
  }

  bool check_replay() {
    ++replays_;
    Replay again;
    again.answer.reserve(kReplayAnswer);
    if (!replay(&again)) return false;
    if (again.answer != reference_.answer ||
        memcmp(again.logits.data(), reference_.logits.data(), reference_.logits.size() * sizeof(float)) != 0) {
      size_t at = 0;
      while (at < again.answer.size() && again.answer[at] == reference_.answer[at]) ++at;
      fprintf(stderr,
              "soak: %s: decode step %llu: the reference conversation replayed differently (first differing answer "
              "token %zu of %zu%s)\n",
              options_.path, (unsigned long long)steps_, at, reference_.answer.size(),
              at == again.answer.size() ? ": the tokens match, the last logits do not" : "");
      return false;
    }
    return true;
  }

  const LlmOptions& options_;
  DecoderProgram* program_;
  SampleSeries* series_;
  SeededRandom random_;
  int64_t vocab_ = 0;
  std::vector<int64_t> eos_, system_prompt_, reference_turn_;
  Replay reference_;
  Session* session_ = nullptr;
  int64_t next_ = 0;
  uint64_t steps_ = 0;
  size_t slides_ = 0, chats_ = 0, replays_ = 0;
};

}  // namespace

bool llm_soak(const LlmOptions& options, SampleSeries* series) {
  auto program = DecoderProgram::load(options.path);
  if (!ok(program.ok() ? Error::Ok : program.error(), "load", options.path, 0)) return false;
  const auto start = std::chrono::steady_clock::now();
  LlmSoak soak(options, program->get(), series);
  const bool good = soak.run();
  series->set_note(soak.note());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return series->finish(soak.steps(), seconds) && good;
}

}  // namespace soak
}  // namespace ember
