// A grammar constraint for generation: loads a GBNF grammar or a JSON Schema, then per step gives the allowed
// tokens' mask and takes the chosen token.
//
//   auto c = GrammarConstraint::load_gbnf(text, vocab) / load_json_schema(text, vocab);   // error: why
//   c->mask(words);                      // before sampling: bit i set <=> token i allowed
//   c->accept(id);                       // after: false if the token is not allowed
//   c->done();                           // only an end token may come now
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "examples/llm/grammar/grammar.h"
#include "examples/llm/grammar/matcher.h"
#include "examples/llm/grammar/token_mask.h"

namespace ember {
namespace llm {

class GrammarConstraint {
 public:
  // nullptr with `error` set when the text is refused. `vocab` must outlive the constraint.
  static std::unique_ptr<GrammarConstraint> load_gbnf(std::string_view gbnf, const TokenVocabulary& vocab,
                                                      std::string* error);
  static std::unique_ptr<GrammarConstraint> load_json_schema(std::string_view schema, const TokenVocabulary& vocab,
                                                             std::string* error);

  size_t words() const { return masker_.words(); }
  void mask(uint32_t* words) { masker_.fill(matcher_, words); }
  // Takes token `id`: a stop token only when the grammar can end, any other only when its bytes are allowed.
  bool accept(int32_t id);
  void rollback(size_t n) { matcher_.rollback(n); }
  // Back to the start for a new generation; the mask caches are kept (they depend on the grammar only).
  void reset() {
    matcher_.rollback(matcher_.history());
    ended_ = false;
  }
  bool can_end() const { return matcher_.can_end(); }
  bool done() const { return matcher_.finished(); }
  bool overflowed() const { return matcher_.overflowed(); }
  const Grammar& grammar() const { return *grammar_; }
  const TokenMasker& masker() const { return masker_; }
  GrammarMatcher& matcher() { return matcher_; }

 private:
  GrammarConstraint(std::unique_ptr<Grammar> g, const TokenVocabulary& vocab)
      : grammar_(std::move(g)), vocab_(vocab), matcher_(*grammar_), masker_(vocab, *grammar_) {}
  std::unique_ptr<Grammar> grammar_;
  const TokenVocabulary& vocab_;
  GrammarMatcher matcher_;
  TokenMasker masker_;
  bool ended_ = false;
};

// out[0..n_logits) = logits with every token the mask refuses at -infinity. Ids from n_tokens (the vocabulary's
// size) on, a model's padding rows past the tokenizer, are always refused.
void mask_logits(const uint32_t* mask, size_t n_tokens, const float* logits, size_t n_logits, float* out);

}  // namespace llm
}  // namespace ember
