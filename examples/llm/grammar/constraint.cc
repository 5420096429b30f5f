#include "examples/llm/grammar/constraint.h"

#include <math.h>

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
  return load_gbnf(gbnf, vocab, error);
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

void apply_token_mask(const uint32_t* mask, float* logits, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!((mask[i >> 5] >> (i & 31)) & 1)) logits[i] = -INFINITY;
  }
}

}  // namespace llm
}  // namespace ember
