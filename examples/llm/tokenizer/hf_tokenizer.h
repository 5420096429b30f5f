// Hugging Face tokenizer.json, byte-level BPE (GPT-2, Llama-3, Qwen2 style).
//
// What a tokenizer.json may hold to load here (anything else is refused with Error::NotSupported, naming it):
//   normalizer     null (or an empty Sequence); "NFC" is accepted and assumed already true of the input (see README)
//   pre_tokenizer  ByteLevel (use_regex: GPT-2's pattern; add_prefix_space), Split on the GPT-2, Llama-3 or Qwen2
//                  pattern with behavior "Isolated", or a Sequence of those
//   model          BPE: vocab, merges ("a b" strings or [a, b] pairs), unk_token, fuse_unk, ignore_merges;
//                  no continuing_subword_prefix / end_of_word_suffix; dropout is ignored (encoding is deterministic)
//   added_tokens   special or not, normalized or not, lstrip, rstrip, single_word; matched before pre-tokenization
//   decoder        ByteLevel (or null); post_processor: only read for BOS/EOS (TemplateProcessing)
#pragma once

#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "examples/llm/tokenizer/json.h"
#include "examples/llm/tokenizer/pre_tokenizer.h"
#include "examples/llm/tokenizer/tokenizer.h"

namespace ember {
namespace llm {

class HfTokenizer final : public Tokenizer {
 public:
  // Parses a tokenizer.json document. `config_json`, when not empty, is the model's tokenizer_config.json, whose
  // bos_token / eos_token override what tokenizer.json implies. A refusal says what and where (a byte offset for
  // JSON syntax, a JSON path such as model.merges[12] otherwise) in `*why` when given, in the log otherwise.
  static Result<std::unique_ptr<Tokenizer>> load(std::string_view json, std::string_view config_json = {},
                                                 std::string* why = nullptr);

  Result<std::vector<int32_t>> encode(std::string_view text, bool bos, bool eos) const override;
  Result<std::string> decode(int32_t prev, int32_t id) const override;
  Result<std::string> decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  Result<std::string> id_to_piece(int32_t id) const override;
  int32_t piece_to_id(std::string_view piece) const override;
  const char* kind() const override { return "huggingface-bpe"; }

 private:
  struct AddedToken {
    std::string content;
    int32_t id;
    bool special;
    bool normalized;
    bool lstrip;
    bool rstrip;
    bool single_word;
  };
  struct PreTokenizerStep {
    bool byte_level;  // else a Split
    SplitPattern pattern;
    bool use_regex;
    bool add_prefix_space;
  };
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  // A part of the input: an added token's id, or text (id -1) to pre-tokenize and encode with the model.
  struct Segment {
    int32_t id;
    size_t begin;
    size_t end;
  };

  // Ids index tables, so the largest allowed is the number of entries the file holds plus kIdSlack (room for the
  // holes some real files leave), and never kMaxIds or more.
  static constexpr size_t kIdSlack = 1 << 16;
  static constexpr size_t kMaxIds = 1 << 30;

  HfTokenizer() = default;
  Error parse(const JsonValue& root);
  // `id` (the value of `path`[`key`]) is an integer in [0, id_limit_), else a refusal naming both.
  Error check_id(const JsonValue& id, const char* path, const char* key) const;
  Error parse_model(const JsonValue& model);
  Error parse_pre_tokenizer(const JsonValue& pre);
  Error parse_added_tokens(const JsonValue& added);
  void find_bos_eos(const JsonValue& root, std::string_view config_json);

  void split_added(std::string_view text, bool normalized, std::vector<Segment>* segments) const;
  void encode_text(std::string_view text, std::vector<int32_t>* ids) const;
  void encode_word(std::string_view word, std::vector<int32_t>* ids) const;

  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;  // the model's, byte-level spelled
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<AddedToken> added_;
  std::vector<PreTokenizerStep> pre_;
  std::vector<std::string> pieces_;  // by id: vocabulary entry or added token content
  std::vector<std::string> bytes_;   // by id: what decode writes
  std::vector<uint8_t> special_;     // by id: a special added token
  bool first_byte_[2][256] = {};     // [normalized][b]: some added token starts with byte b
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  int64_t id_limit_ = 0;
  std::string* why_ = nullptr;  // where parse()'s refusal goes; set only while loading
};

}  // namespace llm
}  // namespace ember
