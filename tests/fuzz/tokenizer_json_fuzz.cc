// Fuzz target: a Hugging Face tokenizer.json is a user's file. The input is the document's text, optionally
// followed by a NUL byte and a tokenizer_config.json (which a real load reads from beside it; JSON text has no
// NUL, so the split takes nothing from the first document). It is loaded (examples/llm/tokenizer: the JSON reader,
// the BPE model, every pre-tokenizer), and when it loads, used (tokenizer_fuzz_checks.h). The load may refuse with
// an error; nothing may crash, read out of bounds, overflow or allocate past libFuzzer's memory limit.

#include <string_view>

#include "examples/llm/tokenizer/hf_tokenizer.h"
#include "tests/fuzz/tokenizer_fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view config;
  const size_t nul = input.find('\0');
  if (nul != std::string_view::npos) {
    config = input.substr(nul + 1);
    input = input.substr(0, nul);
  }
  std::string why;
  auto tok = llm::HfTokenizer::load(input, config, &why);
  fuzz::check_load(tok, why);
  return 0;
}
