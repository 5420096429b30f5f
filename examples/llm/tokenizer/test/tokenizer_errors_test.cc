// load_tokenizer on small hand-made models, and the named errors of files it refuses: malformed JSON, truncated
// protobuf, unknown or unsupported model types, missing pieces, ids out of range.
#include "examples/llm/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace llm {
namespace {

using namespace std::string_literals;

// ---- a protobuf writer for hand-made SentencePiece models

std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string key(uint32_t field, uint32_t wire) { return varint(field << 3 | wire); }
std::string ld(uint32_t field, const std::string& bytes) { return key(field, 2) + varint(bytes.size()) + bytes; }
std::string vi(uint32_t field, uint64_t v) { return key(field, 0) + varint(v); }
std::string f32(uint32_t field, float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  std::string out = key(field, 5);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
  return out;
}
std::string piece(const std::string& text, float score, int type = 1) {
  return ld(1, ld(1, text) + f32(2, score) + vi(3, type));
}

// A BPE model: <unk> <s> </s>, then ▁ a b ▁a ab ▁ab (higher score merges first).
std::string sp_model(int model_type = 2, bool with_unk = true) {
  std::string m;
  if (with_unk) m += piece("<unk>", 0, 2);
  m += piece("<s>", 0, 3) + piece("</s>", 0, 3);
  m += piece("\xE2\x96\x81", -1) + piece("a", -2) + piece("b", -3) +
       piece(
           "\xE2\x96\x81"
           "a",
           -4) +
       piece("ab", -5) +
       piece(
           "\xE2\x96\x81"
           "ab",
           -6);
  m += ld(2, vi(3, model_type));                                     // trainer_spec.model_type
  m += ld(3, vi(3, 1) + vi(4, 0) + vi(5, 1));                        // dummy prefix, keep spaces, escape them
  return m;
}

Result<std::unique_ptr<Tokenizer>> load(const std::string& bytes) {
  testing::clear_log();
  return load_tokenizer_from_bytes(bytes);
}

TEST(SentencePiece, HandMadeBpeModelEncodesAndDecodes) {
  auto tok = load(sp_model());
  ASSERT_TRUE(tok.ok()) << testing::last_log();
  EXPECT_STREQ((*tok)->kind(), "sentencepiece-bpe");
  EXPECT_EQ((*tok)->vocab_size(), 9u);
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  auto ids = (*tok)->encode("ab b", true, true);
  ASSERT_TRUE(ids.ok());
  // "▁ab▁b": ▁+a (-4) first, then ▁a+b (-6); ▁ b is no piece pair beyond ▁ and b.
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 8, 3, 5, 2}));
  auto text = (*tok)->decode(*ids, false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "ab b");
  auto first = (*tok)->decode(1, 8);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "ab");  // the dummy prefix's space is dropped after BOS
  auto bad = (*tok)->decode(8, 9);
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "token id 9 is outside the vocabulary [0, 9)");
}

TEST(SentencePiece, UnknownCharactersBecomeOneUnknownToken) {
  auto tok = load(sp_model());
  ASSERT_TRUE(tok.ok());
  auto ids = (*tok)->encode("a\xE6\x97\xA5\xE6\x9C\xAC", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{6, 0}));
}

TEST(SentencePieceErrors, TruncatedProtobuf) {
  const std::string m = sp_model();
  auto tok = load(m.substr(0, m.size() - 3));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("protobuf ModelProto: field 3: length 6 at byte"), std::string::npos)
      << testing::last_log();
  EXPECT_NE(testing::last_log().find("runs past the end (3 bytes left)"), std::string::npos) << testing::last_log();
}

TEST(SentencePieceErrors, UnknownModelType) {
  auto tok = load(sp_model(7));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error(), Error::NotSupported);
  EXPECT_EQ(testing::last_log(), "SentencePiece model: unknown model type 7 (known: 1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR)");
}

TEST(SentencePieceErrors, WordAndCharModelsAreNotSupported) {
  auto tok = load(sp_model(3));
  EXPECT_EQ(tok.error(), Error::NotSupported);
  EXPECT_EQ(testing::last_log(), "SentencePiece model: model type WORD is not supported (only BPE and UNIGRAM)");
}

TEST(SentencePieceErrors, NoUnknownPiece) {
  auto tok = load(sp_model(2, false));
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "SentencePiece model: no unknown piece (type UNKNOWN)");
}

TEST(SentencePieceErrors, ByteFallbackWithoutBytePieces) {
  auto tok = load(sp_model() + ld(2, vi(35, 1)));
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "SentencePiece model: byte_fallback is on but byte piece <0x00> is missing");
}

TEST(SentencePieceErrors, PieceOfUnknownTypeAndWrongWireType) {
  auto tok = load(piece("x", 0, 9));
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "SentencePiece model: piece 0 has unknown type 9");
  auto tok2 = load(ld(1, vi(1, 5)));
  EXPECT_EQ(tok2.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "protobuf ModelProto.pieces: field 1 has wire type 0, expected 2");
}

// ---- tokenizer.json

// A byte-level BPE over "a", "b", "Ġ" (space): merges a b -> ab, Ġ ab -> Ġab.
std::string hf_json(const std::string& model_type = "BPE", const std::string& extra_merge = "",
                    const std::string& pre = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})") {
  return R"({"version": "1.0", "normalizer": null, "pre_tokenizer": )" + pre +
         R"(, "decoder": {"type": "ByteLevel"},
  "added_tokens": [{"id": 5, "content": "<|endoftext|>", "special": true, "normalized": false}],
  "model": {"type": ")" +
         model_type + R"(", "vocab": {"a": 0, "b": 1, "\u0120": 2, "ab": 3, "\u0120ab": 4},
            "merges": ["a b", ["\u0120", "ab"])" +
         extra_merge + "]}}";
}

TEST(HuggingFace, HandMadeByteLevelBpe) {
  auto tok = load(hf_json());
  ASSERT_TRUE(tok.ok()) << testing::last_log();
  EXPECT_STREQ((*tok)->kind(), "huggingface-bpe");
  EXPECT_EQ((*tok)->vocab_size(), 6u);
  EXPECT_EQ((*tok)->bos_id(), 5);  // <|endoftext|> is both, as in GPT-2
  EXPECT_EQ((*tok)->eos_id(), 5);
  auto ids = (*tok)->encode("ab ab<|endoftext|>b", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{3, 4, 5, 1}));
  auto text = (*tok)->decode(*ids, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "ab abb");
  auto piece4 = (*tok)->decode(3, 4);
  ASSERT_TRUE(piece4.ok());
  EXPECT_EQ(*piece4, " ab");
  auto bad = (*tok)->decode(-1, -1);
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
}

TEST(HuggingFaceErrors, MalformedJson) {
  const std::string json = hf_json();
  auto tok = load(json.substr(0, json.size() - 2));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "tokenizer.json is not valid JSON (see the message above)");
}

TEST(HuggingFaceErrors, UnsupportedModelType) {
  auto tok = load(hf_json("WordPiece"));
  EXPECT_EQ(tok.error(), Error::NotSupported);
  EXPECT_EQ(testing::last_log(), "tokenizer.json: model type \"WordPiece\" is not supported (only \"BPE\")");
}

TEST(HuggingFaceErrors, MergeOfUnknownTokens) {
  auto tok = load(hf_json("BPE", R"(, "a x")"));
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "tokenizer.json: merge 2 (\"a\", \"x\") names a token missing from the vocabulary");
}

TEST(HuggingFaceErrors, UnknownSplitRegex) {
  auto tok = load(hf_json("BPE", "",
                          R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\w+"},
                              "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "use_regex": false}]})"));
  EXPECT_EQ(tok.error(), Error::NotSupported);
  EXPECT_EQ(
      testing::last_log(),
      "tokenizer.json: pre-tokenizer step 0 splits on a regex that is none of GPT-2's, Llama-3's or Qwen2's: \\w+");
}

TEST(HuggingFaceErrors, NotByteLevel) {
  auto tok = load(hf_json("BPE", "", R"({"type": "Whitespace"})"));
  EXPECT_EQ(tok.error(), Error::NotSupported);
  EXPECT_EQ(testing::last_log(),
            "tokenizer.json: pre-tokenizer \"Whitespace\" is not supported (only ByteLevel and Split)");
}

TEST(HuggingFaceErrors, BosAskedForButAbsent) {
  const std::string json = R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0},
                              "merges": []}})";
  auto tok = load(json);
  ASSERT_TRUE(tok.ok()) << testing::last_log();
  auto ids = (*tok)->encode("a", true, false);
  EXPECT_EQ(ids.error(), Error::InvalidState);
  EXPECT_EQ(testing::last_log(), "encode: BOS asked for, but this tokenizer has none");
}

// ---- format detection and files

TEST(LoadTokenizer, MissingFileEmptyAndUnknownFormat) {
  testing::clear_log();
  auto tok = load_tokenizer("/nonexistent/tokenizer.model");
  EXPECT_EQ(tok.error(), Error::AccessFailed);
  EXPECT_EQ(testing::last_log(), "cannot open tokenizer file /nonexistent/tokenizer.model");
  auto empty = load("");
  EXPECT_EQ(empty.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "tokenizer: the file is empty");
  auto garbage = load("\xFF\x01garbage"s);
  EXPECT_EQ(garbage.error(), Error::NotSupported);
  EXPECT_EQ(testing::last_log(),
            "tokenizer: the file is neither a tokenizer.json (a JSON object) nor a SentencePiece model (a protobuf "
            "starting with its pieces); first byte 0xFF");
}

}  // namespace
}  // namespace llm
}  // namespace ember
