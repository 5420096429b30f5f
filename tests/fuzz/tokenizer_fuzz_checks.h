// What both tokenizer fuzz targets do with a tokenizer that loaded: encode a few strings (ASCII, multi-byte UTF-8,
// invalid UTF-8, special tokens written as text, pieces of its own vocabulary), then decode the ids whole and one
// at a time. Every id encode returns must be inside the vocabulary and decode must accept it; ids outside must be
// refused. A broken promise aborts, which libFuzzer reports as a crash.
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "examples/llm/tokenizer/tokenizer.h"

namespace ember {
namespace fuzz {

// The loader's refusal when EMBER_FUZZ_LOG=1 (as fuzz_pal.cc prints the log), to see why an input is refused.
inline void print_refusal(const std::string& why) {
  static const bool print = getenv("EMBER_FUZZ_LOG") != nullptr && getenv("EMBER_FUZZ_LOG")[0] == '1';
  if (print) fprintf(stderr, "refused: %s\n", why.c_str());
}

[[noreturn]] inline void tokenizer_broke(const llm::Tokenizer& tok, const char* what, int64_t value) {
  fprintf(stderr, "%s tokenizer (%zu tokens): %s (%lld)\n", tok.kind(), tok.vocab_size(), what,
          static_cast<long long>(value));
  abort();
}

inline void check_ids(const llm::Tokenizer& tok, const std::vector<int32_t>& ids) {
  const int32_t n = static_cast<int32_t>(tok.vocab_size());
  int32_t prev = -1;
  for (int32_t id : ids) {
    if (id < 0 || id >= n) tokenizer_broke(tok, "encode returned an id outside the vocabulary", id);
    if (!tok.decode(prev, id).ok()) tokenizer_broke(tok, "decode refused an id encode returned", id);
    if (!tok.id_to_piece(id).ok()) tokenizer_broke(tok, "id_to_piece refused an id encode returned", id);
    prev = id;
  }
  if (!tok.decode(ids, false).ok() || !tok.decode(ids, true).ok()) {
    tokenizer_broke(tok, "decode refused the ids encode returned", static_cast<int64_t>(ids.size()));
  }
}

// The strings are short, so a hostile vocabulary cannot make one input outlast libFuzzer's time limit.
inline void exercise_tokenizer(const llm::Tokenizer& tok) {
  std::vector<std::string> texts = {
      "Hello world, it's 2026!  Don't   stop.\n\tok",
      "Gr\xC3\xBC\xC3\x9F"
      "e \xF0\x9F\x91\x8B \xE4\xBD\xA0\xE5\xA5\xBD \xD0\x9F\xD1\x80\xD0\xB8 \xE2\x96\x81x \xEF\xBC\xA1",
      "bad \xFF\xFE utf8 \xC3( \xE2\x82 \xF0\x9F\x91 \xED\xA0\x80 end",
      "<s>a</s> <|begin_of_text|>x<|endoftext|> <custom> b<strip>c <word> d<word>e <sep>",
      "",
      " ",
  };
  // A few of its own pieces, concatenated: text the merges and the added tokens apply to.
  std::string own;
  const size_t n = tok.vocab_size();
  for (size_t i = 0; i < 8 && n > 0; ++i) {
    auto piece = tok.id_to_piece(static_cast<int32_t>((i * 7919) % n));
    if (piece.ok() && piece->size() <= 64) own += *piece;
  }
  texts.push_back(own);
  for (const std::string& text : texts) {
    for (bool special : {false, true}) {
      auto ids = tok.encode(text, special && tok.bos_id() >= 0, special && tok.eos_id() >= 0);
      if (!ids.ok()) tokenizer_broke(tok, "encode refused a string", static_cast<int64_t>(text.size()));
      check_ids(tok, *ids);
    }
  }
  for (int32_t bad : {-1, static_cast<int32_t>(n), INT32_MAX, INT32_MIN}) {
    if (tok.decode(-1, bad).ok() || tok.id_to_piece(bad).ok() || tok.decode(std::vector<int32_t>{bad}, false).ok()) {
      tokenizer_broke(tok, "an id outside the vocabulary was accepted", bad);
    }
  }
  for (size_t i = 0; i < 4 && n > 0; ++i) {
    auto piece = tok.id_to_piece(static_cast<int32_t>(i * (n / 4)));
    if (piece.ok()) (void)tok.piece_to_id(*piece);
  }
}

// A loader's answer: a refusal must say why (aborts otherwise); a tokenizer that loaded is exercised.
template <typename Loaded>
void check_load(const Loaded& tok, const std::string& why) {
  if (!tok.ok()) {
    if (why.empty()) abort();
    print_refusal(why);
    return;
  }
  exercise_tokenizer(**tok);
}

}  // namespace fuzz
}  // namespace ember
