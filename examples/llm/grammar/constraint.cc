#include "examples/llm/grammar/constraint.h"

#include <math.h>
#include <string.h>

#include "examples/llm/grammar/gbnf.h"
#include "examples/llm/grammar/json_schema.h"

namespace ember {
namespace llm {

std::unique_ptr<GrammarConstraint> GrammarConstraint::load_gbnf(std::string_view gbnf, const TokenVocabulary& vocab,
                                                                std::string* error) {
  std::unique_ptr<Grammar> g(new Grammar);
  if (!parse_gbnf(gbnf, g.get(), error)) return nullptr;
  std::unique_ptr<GrammarConstraint> c(new GrammarConstraint(std::move(g), vocab));
  if (c->overflowed()) {
    *error = "the grammar's start passes the matcher's bounds (too deep or too ambiguous)";
    return nullptr;
  }
  return c;
}

std::unique_ptr<GrammarConstraint> GrammarConstraint::load_json_schema(std::string_view schema,
                                                                       const TokenVocabulary& vocab,
                                                                       std::string* error) {
  std::string gbnf;
  if (!json_schema_to_gbnf(schema, &gbnf, error)) return nullptr;
  std::unique_ptr<GrammarConstraint> c = load_gbnf(gbnf, vocab, error);
  if (c == nullptr) {
    // The compiled grammar's refusal (a limit passed) names one of its rules: say which part of the schema made it.
    const size_t at = error->find("rule '");
    const size_t end = at == std::string::npos ? at : error->find('\'', at + 6);
    const std::string pointer = end == std::string::npos
                                    ? ""
                                    : schema_rule_pointer(gbnf, std::string_view(*error).substr(at + 6, end - at - 6));
    *error = (pointer.empty() ? std::string("/") : pointer) + ": the schema's grammar is refused: " + *error;
  }
  return c;
}

bool GrammarConstraint::accept(int32_t id) {
  if (ended_ || id < 0 || static_cast<size_t>(id) >= vocab_.size()) return false;
  if (vocab_.is_stop(id)) {
    if (!matcher_.can_end()) return false;
    ended_ = true;
    return true;
  }
  const std::string& b = vocab_.bytes(id);
  return !b.empty() && matcher_.accept_bytes(b);
}

void mask_logits(const uint32_t* mask, size_t n_tokens, const float* logits, size_t n_logits, float* out) {
  const size_t n = n_tokens < n_logits ? n_tokens : n_logits;
  // A word at a time: under a grammar most words are all refused, and inside free text many all allowed.
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const uint32_t bits = mask[i >> 5];
    if (bits == 0) {
      for (size_t k = 0; k < 32; ++k) out[i + k] = -INFINITY;
    } else if (bits == ~uint32_t{0}) {
      memcpy(out + i, logits + i, 32 * sizeof(float));
    } else {
      for (size_t k = 0; k < 32; ++k) out[i + k] = ((bits >> k) & 1) ? logits[i + k] : -INFINITY;
    }
  }
  for (; i < n; ++i) out[i] = ((mask[i >> 5] >> (i & 31)) & 1) ? logits[i] : -INFINITY;
  for (; i < n_logits; ++i) out[i] = -INFINITY;
}

}  // namespace llm
}  // namespace ember
