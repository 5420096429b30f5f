#include "examples/llm/tokenizer/tokenizer.h"

#include <stdio.h>

#include "examples/llm/tokenizer/hf_tokenizer.h"
#include "examples/llm/tokenizer/refusal.h"
#include "examples/llm/tokenizer/sentencepiece.h"

namespace ember {
namespace llm {
namespace {

// The whole file at `path`, or Error::AccessFailed.
Result<std::string> read_file(const std::string& path, std::string* why) {
  FILE* f = fopen(path.c_str(), "rb");
  EMBER_REFUSE_UNLESS(why, f != nullptr, AccessFailed, "cannot open tokenizer file %s", path.c_str());
  std::string data;
  char buffer[1 << 16];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) data.append(buffer, n);
  const bool failed = ferror(f) != 0;
  fclose(f);
  EMBER_REFUSE_UNLESS(why, !failed, AccessFailed, "cannot read tokenizer file %s", path.c_str());
  return data;
}

bool looks_like_json(std::string_view data) {
  size_t i = 0;
  if (data.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // a UTF-8 byte order mark
  while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
  return i < data.size() && data[i] == '{';
}

Result<std::unique_ptr<Tokenizer>> load(std::string_view data, std::string_view config_json, std::string* why) {
  EMBER_REFUSE_UNLESS(why, !data.empty(), InvalidArgument, "tokenizer: the file is empty");
  if (looks_like_json(data)) {
    // Offsets in messages then count from after the byte order mark.
    if (data.substr(0, 3) == "\xEF\xBB\xBF") data.remove_prefix(3);
    return HfTokenizer::load(data, config_json, why);
  }
  // A SentencePiece ModelProto starts with its first piece: field 1, length-delimited (0x0A).
  EMBER_REFUSE_UNLESS(why, data[0] == 0x0A, NotSupported,
                      "tokenizer: the file is neither a tokenizer.json (a JSON object) nor a SentencePiece model (a "
                      "protobuf starting with its pieces); first byte 0x%02X",
                      static_cast<unsigned>(static_cast<uint8_t>(data[0])));
  return SentencePieceTokenizer::load(data, why);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_bytes(std::string_view data, std::string* why) {
  return load(data, {}, why);
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path, std::string* why) {
  EMBER_TRY_ASSIGN(data, read_file(path, why));
  std::string config;
  if (looks_like_json(data)) {
    // tokenizer_config.json beside a tokenizer.json names its BOS and EOS tokens.
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    FILE* f = fopen((dir + "tokenizer_config.json").c_str(), "rb");
    if (f != nullptr) {
      fclose(f);
      std::string ignored;  // unreadable: tokenizer.json's own choice of BOS and EOS stands
      auto c = read_file(dir + "tokenizer_config.json", &ignored);
      if (c.ok()) config = std::move(*c);
    }
  }
  return load(data, config, why);
}

}  // namespace llm
}  // namespace ember
