// Fuzz target: a SentencePiece .model (a serialized ModelProto) is a user's file. The input is the model's bytes,
// loaded by the hand-written protobuf reader (examples/llm/tokenizer: pieces, trainer and normalizer specs, the
// precompiled charsmap's double-array trie), and when it loads, used (tokenizer_fuzz_checks.h). The load may
// refuse with an error; nothing may crash, read out of bounds, overflow or loop forever.

#include <string_view>

#include "examples/llm/tokenizer/sentencepiece.h"
#include "tests/fuzz/tokenizer_fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  std::string why;
  auto tok = llm::SentencePieceTokenizer::load(std::string_view(reinterpret_cast<const char*>(data), size), &why);
  fuzz::check_load(tok, why);
  return 0;
}
