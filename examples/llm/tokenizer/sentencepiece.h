// SentencePiece models (.model files: a serialized ModelProto), Llama-2 / T5 style, read without the protobuf or
// sentencepiece libraries.
//
// Read from the model: pieces (piece, score, type), trainer_spec.model_type (BPE or UNIGRAM; WORD and CHAR are
// refused), byte_fallback, unk/bos/eos pieces, normalizer_spec.{add_dummy_prefix, remove_extra_whitespaces,
// escape_whitespaces, precompiled_charsmap} (the precompiled normalization rules, e.g. nmt_nfkc, are applied from
// the charsmap's double-array trie). treat_whitespace_as_suffix and a denormalizer are refused.
#pragma once

#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "examples/llm/tokenizer/tokenizer.h"

namespace ember {
namespace llm {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // A refusal says what and where (the byte offset, field number and wire type, or the piece) in `*why` when
  // given, in the log otherwise.
  static Result<std::unique_ptr<Tokenizer>> load(std::string_view model, std::string* why = nullptr);

  Result<std::vector<int32_t>> encode(std::string_view text, bool bos, bool eos) const override;
  Result<std::string> decode(int32_t prev, int32_t id) const override;
  Result<std::string> decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  Result<std::string> id_to_piece(int32_t id) const override;
  int32_t piece_to_id(std::string_view piece) const override;
  const char* kind() const override { return unigram_ ? "sentencepiece-unigram" : "sentencepiece-bpe"; }

  // The text the model encodes: `text` after normalization (charsmap, white space rules, dummy prefix, "▁").
  std::string normalize(std::string_view text) const;

 private:
  enum PieceType : uint8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  struct Piece {
    std::string text;
    float score;
    PieceType type;
  };

  SentencePieceTokenizer() = default;
  Error parse(std::string_view model);

  // The normalized form of the longest prefix of `input` and how many bytes of input it consumed.
  std::pair<std::string_view, size_t> normalize_prefix(std::string_view input) const;
  // Length of the longest user-defined symbol at the start of `text`, or 0.
  size_t user_defined_prefix(std::string_view text) const;
  // The id of a piece as the model's lookup gives it: reserved (control, unknown, byte) or ordinary, else unk.
  int32_t lookup(std::string_view piece) const;

  void encode_bpe(std::string_view normalized, std::vector<std::pair<std::string_view, int32_t>>* out) const;
  void encode_unigram(std::string_view normalized, std::vector<std::pair<std::string_view, int32_t>>* out) const;

  std::vector<Piece> pieces_;
  std::unordered_map<std::string_view, int32_t> ordinary_;  // normal, user-defined and unused pieces
  std::unordered_map<std::string_view, int32_t> reserved_;  // control, unknown and byte pieces
  std::vector<std::string_view> user_defined_;
  size_t max_piece_bytes_ = 0;
  int32_t byte_ids_[256] = {};
  int32_t unk_id_ = -1;
  float min_score_ = 0;
  float max_score_ = 0;
  bool unigram_ = false;
  bool byte_fallback_ = false;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
  bool escape_whitespaces_ = true;
  std::string unk_surface_ = " \xE2\x81\x87 ";
  // Precompiled normalization rules: a darts-clone double array over UTF-8 bytes, and the replacement strings.
  std::vector<uint32_t> trie_;
  std::string normalized_pool_;
  std::string* why_ = nullptr;  // where parse()'s refusal goes; set only while loading
};

}  // namespace llm
}  // namespace ember
