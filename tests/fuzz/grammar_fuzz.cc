// Fuzz target: grammars (GBNF) and JSON Schemas are user-provided text (grammar_tool, the server's response_format
// and tools). The first byte chooses which (even: GBNF, odd: a JSON Schema); the rest up to its last NUL byte is
// the text, and the bytes after that NUL are the choices of a short walk. The text is compiled against a small fixed
// vocabulary (fuzz_vocab.h); when it compiles, a few steps each compute the token mask, check it against accept()
// (every allowed token is taken, a refused one is not), take an allowed token the input chooses, and sometimes
// roll back and check the mask is the one computed before. A refusal must say why; nothing may crash, hang, or
// overflow the stack, whatever the grammar (left recursion, huge repetition counts, deep nesting, bad UTF-8).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "examples/llm/grammar/constraint.h"
#include "examples/llm/grammar/json_schema.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_vocab.h"

namespace ember {
namespace {

constexpr int kMaxSteps = 8;

[[noreturn]] void fault(const char* what, const std::string& detail) {
  fprintf(stderr, "grammar_fuzz: %s: %s\n", what, detail.c_str());
  abort();
}

// Compiles `text`; nullptr after checking the refusal says something (and, for a schema whose grammar the compiler
// wrote, that the grammar was refused only for a named limit: a syntax error there is the compiler's bug).
std::unique_ptr<llm::GrammarConstraint> compile(bool schema, std::string_view text) {
  const llm::TokenVocabulary& vocab = fuzz::fuzz_vocabulary();
  std::string error;
  if (!schema) {
    auto c = llm::GrammarConstraint::load_gbnf(text, vocab, &error);
    if (c == nullptr && error.empty()) fault("GBNF refused without a message", std::string(text));
    return c;
  }
  std::string gbnf;
  if (!llm::json_schema_to_gbnf(text, &gbnf, &error)) {
    if (error.empty()) fault("schema refused without a message", std::string(text));
    return nullptr;
  }
  auto c = llm::GrammarConstraint::load_json_schema(text, vocab, &error);
  if (c == nullptr && error.find("(kMax") == std::string::npos && error.find("matcher's bounds") == std::string::npos) {
    fault("the schema's own grammar was refused for no named limit", error + "\n" + gbnf);
  }
  return c;
}

bool allowed(const std::vector<uint32_t>& mask, size_t id) { return (mask[id >> 5] >> (id & 31)) & 1; }

// A few steps of generation under the constraint, with the mask checked against accept() on the way.
void walk(llm::GrammarConstraint& c, fuzz::FuzzInput& in) {
  const llm::TokenVocabulary& vocab = fuzz::fuzz_vocabulary();
  std::vector<std::vector<uint32_t>> masks;  // masks[k]: the mask after k accepted tokens
  std::vector<uint32_t> mask(c.words());
  for (int step = 0; step < kMaxSteps; ++step) {
    c.mask(mask.data());
    const bool bounded = c.overflowed();  // past a matcher bound the mask is a best effort, not exact
    std::vector<int32_t> ids;
    for (size_t id = 0; id < vocab.size(); ++id) {
      if (allowed(mask, id)) ids.push_back(static_cast<int32_t>(id));
    }
    if (vocab.is_stop(0) && allowed(mask, 0) != c.can_end()) fault("the end token's bit differs from can_end()", "");
    // A token the mask refuses must be refused by accept() too (and leave the state as it was).
    const int32_t probe = static_cast<int32_t>(in.below(static_cast<uint32_t>(vocab.size())));
    if (!bounded && !allowed(mask, static_cast<size_t>(probe)) && !vocab.is_stop(probe) && c.accept(probe)) {
      fault("accept() took a token the mask refuses", vocab.bytes(probe));
    }
    masks.push_back(mask);
    const uint8_t action = in.u8();
    if (action >= 224 && c.matcher().history() > 0) {
      // Roll back one to three tokens: the mask must be what it was there.
      const size_t back = 1 + static_cast<size_t>(action % 3);
      const size_t n = back < c.matcher().history() ? back : c.matcher().history();
      c.rollback(n);
      masks.resize(masks.size() - n);
      c.mask(mask.data());
      if (!c.overflowed() && !bounded && mask != masks.back()) fault("the mask after rollback differs", "");
      masks.pop_back();
      continue;
    }
    std::vector<int32_t> tokens;
    for (int32_t id : ids) {
      if (!vocab.is_stop(id)) tokens.push_back(id);
    }
    if (tokens.empty()) return;
    const int32_t id = tokens[action % tokens.size()];
    if (!c.accept(id)) {
      if (!bounded && !c.overflowed()) fault("accept() refused a token the mask allows", vocab.bytes(id));
      return;
    }
  }
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  if (size == 0) return 0;
  const bool schema = (data[0] & 1) != 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string_view choices;
  const size_t nul = text.rfind('\0');
  if (nul != std::string_view::npos) {
    choices = text.substr(nul + 1);
    text = text.substr(0, nul);
  }
  auto c = compile(schema, text);
  if (c == nullptr) return 0;
  fuzz::FuzzInput in(reinterpret_cast<const uint8_t*>(choices.data()), choices.size());
  walk(*c, in);
  return 0;
}
