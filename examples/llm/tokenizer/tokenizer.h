// The tokenizer a text-generation runner uses: text to token ids and back, whatever the model's format.
//
//   auto tok = ember::llm::load_tokenizer("tokenizer.json");   // or "tokenizer.model" (SentencePiece)
//   if (!tok.ok()) ...                                            // Error value; the log says why (or pass &why)
//   auto ids = (*tok)->encode("Hello", /*bos=*/true, /*eos=*/false);
//   for (int32_t id : generated) print((*tok)->decode(prev, id).get()), prev = id;   // streaming
//
// Errors are values (ember::Error / Result, runtime/core/result.h), never exceptions or aborts; each failing call
// logs (EMBER_LOG) what was wrong before returning. A loaded Tokenizer is immutable: encode and decode may run
// on several threads at once.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/result.h"

namespace ember {
namespace llm {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` (UTF-8), with bos_id() before them when `bos` and eos_id() after them when `eos`
  // (Error::InvalidState when asked for one the tokenizer does not have). Special tokens written in the text
  // (e.g. "<|eot_id|>") are recognised as themselves, as the reference libraries do.
  virtual Result<std::vector<int32_t>> encode(std::string_view text, bool bos = false, bool eos = false) const = 0;

  // The bytes token `id` stands for, for streaming output: pieces concatenated are the text (a piece may end in
  // the middle of a UTF-8 character that the next one completes). `prev` is the token before it (-1 at the start):
  // a SentencePiece tokenizer drops the leading space of the first piece after BOS, as its decoder does.
  // Error::InvalidArgument for an id outside [0, vocab_size()).
  virtual Result<std::string> decode(int32_t prev, int32_t id) const = 0;

  // The text of `ids`, as the reference library's decode writes it (special tokens included unless
  // `skip_special`).
  virtual Result<std::string> decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;

  // The piece (vocabulary entry) of `id` as stored in the model, or Error::InvalidArgument.
  virtual Result<std::string> id_to_piece(int32_t id) const = 0;
  // The id of vocabulary entry `piece`, or -1.
  virtual int32_t piece_to_id(std::string_view piece) const = 0;

  size_t vocab_size() const { return vocab_size_; }
  // -1 when the model names none.
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  // Which format was loaded: "huggingface-bpe", "sentencepiece-bpe" or "sentencepiece-unigram".
  virtual const char* kind() const = 0;

 protected:
  size_t vocab_size_ = 0;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
};

// Loads a tokenizer from a file, detecting its format from its first bytes: a Hugging Face tokenizer.json (a JSON
// object) or a SentencePiece model (a protobuf ModelProto). Error::AccessFailed when the file cannot be read,
// Error::InvalidArgument when it is malformed, Error::NotSupported for a model or option this library does not
// implement. What was refused and where (a byte offset and line:column for JSON syntax, a JSON path such as
// model.merges[12] with the field and the limit, a protobuf field's number, wire type and byte offset) goes to
// `*why` when given, to the log otherwise.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path, std::string* why = nullptr);

// The same from the file's bytes.
Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_bytes(std::string_view data, std::string* why = nullptr);

}  // namespace llm
}  // namespace ember
