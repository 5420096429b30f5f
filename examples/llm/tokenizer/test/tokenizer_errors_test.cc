// load_tokenizer on small hand-made models, and the named errors of files it refuses: malformed JSON, truncated
// protobuf, unknown or unsupported model types, missing pieces, ids out of range.
#include "examples/llm/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <stdint.h>
#include <string.h>

#include <algorithm>

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

// What load_tokenizer_from_bytes says when it refuses `bytes` with `code`, given a string for it (nothing is
// logged then: the caller decides where the message goes).
std::string refusal(const std::string& bytes, Error code = Error::InvalidArgument) {
  testing::clear_log();
  std::string why;
  auto tok = load_tokenizer_from_bytes(bytes, &why);
  EXPECT_FALSE(tok.ok());
  if (!tok.ok()) {
    EXPECT_EQ(tok.error(), code) << why;
  }
  EXPECT_EQ(testing::last_log(), "");
  return why;
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

TEST(SentencePieceErrors, TruncatedProtobufNamesFieldWireTypeAndOffset) {
  const std::string m = sp_model();
  // The normalizer spec is the last field; its value loses its last bytes.
  EXPECT_EQ(refusal(m.substr(0, m.size() - 3)),
            "protobuf ModelProto: field 3 (wire type 2, length-delimited) at byte " + std::to_string(m.size() - 8) +
                ": length 6 runs past the end (3 bytes left)");
  // A piece's own field, cut inside the nested message: the offset is the file's.
  // The first piece holds one field whose length varint is cut.
  EXPECT_EQ(refusal(ld(1, "\x0A\x85")),
            "protobuf ModelProto.pieces[0]: field 1 (wire type 2, length-delimited) at byte 2: the length is "
            "truncated (the message ends at byte 4)");
  EXPECT_EQ(refusal(m + "\x08"), "protobuf ModelProto: field 1 (wire type 0, varint) at byte " +
                                     std::to_string(m.size()) +
                                     ": the value is truncated or over 10 bytes (the message ends at byte " +
                                     std::to_string(m.size() + 1) + ")");
  EXPECT_EQ(refusal(m + "\x15\x01"), "protobuf ModelProto: field 2 (wire type 5, 32-bit) at byte " +
                                         std::to_string(m.size()) + ": the 4-byte value is truncated (1 bytes left)");
}

TEST(SentencePieceErrors, WrongAndInvalidWireTypes) {
  EXPECT_EQ(refusal(ld(1, vi(1, 5))),
            "protobuf ModelProto.pieces[0]: field 1 (piece) at byte 2 has wire type 0 (varint), expected 2 "
            "(length-delimited)");
  EXPECT_EQ(refusal(ld(1, ld(1, "a") + vi(2, 3))),
            "protobuf ModelProto.pieces[0]: field 2 (score) at byte 5 has wire type 0 (varint), expected 5 (32-bit)");
  const std::string m = sp_model();
  EXPECT_EQ(refusal(m + key(9, 7)), "protobuf ModelProto: field 9 at byte " + std::to_string(m.size()) +
                                        " has wire type 7, which is not supported (groups or invalid)");
  EXPECT_EQ(refusal(m + key(0, 0) + "\x01"), "protobuf ModelProto: field number 0 (wire type 0) at byte " +
                                                 std::to_string(m.size()) + " is outside [1, 2^29)");
}

TEST(SentencePieceErrors, ModelTypesNameTheFieldAndOffset) {
  const std::string m7 = sp_model(7);
  // trainer_spec is the second-last field, and its model_type key follows its own key and length.
  const std::string at = std::to_string(m7.size() - 8 - 4 + 2);
  EXPECT_EQ(refusal(m7, Error::NotSupported), "SentencePiece model: TrainerSpec.model_type (at byte " + at +
                                                  "): unknown type 7 (known: 1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR)");
  EXPECT_EQ(refusal(sp_model(3), Error::NotSupported), "SentencePiece model: TrainerSpec.model_type (at byte " + at +
                                                           "): WORD is not supported (only BPE and UNIGRAM)");
}

TEST(SentencePieceErrors, PiecesNameTheirIndexAndOffset) {
  EXPECT_EQ(refusal(sp_model(2, false)), "SentencePiece model: ModelProto.pieces: no unknown piece (type UNKNOWN)");
  EXPECT_EQ(refusal(sp_model() + ld(2, vi(35, 1))),
            "SentencePiece model: ModelProto.pieces: TrainerSpec.byte_fallback is on but byte piece <0x00> is missing");
  EXPECT_EQ(refusal(piece("x", 0, 9)),
            "SentencePiece model: ModelProto.pieces[0].type at byte 10: 9 is not a piece type (1 NORMAL to 6 BYTE)");
  const std::string two = piece("<unk>", 0, 2) + piece("a", 0) + piece("a", 0);
  EXPECT_EQ(refusal(two), "SentencePiece model: ModelProto.pieces[2] (at byte " +
                              std::to_string(piece("<unk>", 0, 2).size() + piece("a", 0).size()) +
                              "): \"a\" is defined twice");
}

TEST(SentencePieceErrors, WithoutAStringTheLogSaysIt) {
  auto tok = load(sp_model(2, false));
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "SentencePiece model: ModelProto.pieces: no unknown piece (type UNKNOWN)");
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

TEST(HuggingFaceErrors, MalformedJsonNamesTheByteLineAndColumn) {
  const std::string json = hf_json();
  EXPECT_EQ(refusal(json.substr(0, json.size() - 2)),
            "tokenizer.json: JSON: expected ',' or '}' at byte " + std::to_string(json.size() - 2) + " (line " +
                std::to_string(1 + std::count(json.begin(), json.end() - 2, '\n')) + ", column " +
                std::to_string(json.size() - 2 - json.rfind('\n')) + "; the document ends there)");
  // Bad UTF-8 inside a string.
  EXPECT_EQ(refusal("{\"model\": {\"vocab\": {\"a\xC3(\": 0}}}"),
            "tokenizer.json: JSON: expected UTF-8 text at byte 23 (line 1, column 24)");
}

TEST(HuggingFaceErrors, DeepNestingIsRefusedAtTheDepthLimit) {
  // Nesting far past the limit: refused there, with no recursion that deep (the stack would not survive it).
  const std::string deep = "{\"model\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_EQ(refusal(deep),
            "tokenizer.json: JSON: more than 128 nested arrays and objects (the limit, kMaxJsonDepth) "
            "at byte 137 (line 1, column 138)");
}

TEST(HuggingFaceErrors, HugeIdsNameThePathAndTheLimit) {
  std::string json = hf_json();
  json.replace(json.find("\"ab\": 3"), 7, "\"ab\": 1073741823");
  EXPECT_EQ(refusal(json),
            "tokenizer.json: model.vocab[\"ab\"]: id 1073741823 is outside [0, 65542) (the limit: the file's 6 "
            "vocabulary entries and added tokens plus 65536)");
  json = hf_json();
  json.replace(json.find("\"id\": 5"), 7, "\"id\": -1");
  EXPECT_EQ(refusal(json),
            "tokenizer.json: added_tokens[0]: id -1 is outside [0, 65542) (the limit: the file's 6 vocabulary "
            "entries and added tokens plus 65536)");
  json = hf_json();
  json.replace(json.find("\"a\": 0"), 6, "\"a\": 0.5");
  EXPECT_EQ(refusal(json), "tokenizer.json: model.vocab[\"a\"]: the id is a number, not an integer");
}

TEST(HuggingFaceErrors, UnsupportedModelType) {
  EXPECT_EQ(refusal(hf_json("WordPiece"), Error::NotSupported),
            "tokenizer.json: model.type \"WordPiece\" is not supported (only \"BPE\")");
}

TEST(HuggingFaceErrors, MergesNameTheirIndex) {
  EXPECT_EQ(refusal(hf_json("BPE", R"(, "a x")")),
            "tokenizer.json: model.merges[2]: \"x\" missing from model.vocab (merging \"a\" and \"x\")");
  EXPECT_EQ(refusal(hf_json("BPE", R"(, "a b c")")),
            "tokenizer.json: model.merges[2]: \"a b c\" is not two tokens and a space");
  EXPECT_EQ(refusal(hf_json("BPE", R"(, ["a"])")),
            "tokenizer.json: model.merges[2]: expected \"a b\" or [\"a\", \"b\"], found array");
}

TEST(HuggingFaceErrors, AddedTokensNameTheirIndexAndField) {
  std::string json = hf_json();
  json.replace(json.find("\"content\": \"<|endoftext|>\""), 26, "\"content\": \"\"");
  EXPECT_EQ(refusal(json), "tokenizer.json: added_tokens[0].content: expected a non-empty string");
}

TEST(HuggingFaceErrors, UnknownSplitRegex) {
  EXPECT_EQ(
      refusal(hf_json("BPE", "",
                      R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\w+"},
                          "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "use_regex": false}]})"),
              Error::NotSupported),
      "tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex: \"\\x5Cw+\" is none of GPT-2's, Llama-3's or "
      "Qwen2's patterns");
}

TEST(HuggingFaceErrors, NotByteLevel) {
  EXPECT_EQ(refusal(hf_json("BPE", "", R"({"type": "Whitespace"})"), Error::NotSupported),
            "tokenizer.json: pre_tokenizer.type \"Whitespace\" is not supported (only ByteLevel and Split)");
}

TEST(HuggingFaceErrors, WithoutAStringTheLogSaysIt) {
  auto tok = load(hf_json("BPE", R"(, "a x")"));
  EXPECT_EQ(tok.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(),
            "tokenizer.json: model.merges[2]: \"x\" missing from model.vocab (merging \"a\" and \"x\")");
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
  std::string why;
  EXPECT_EQ(load_tokenizer("/nonexistent/tokenizer.json", &why).error(), Error::AccessFailed);
  EXPECT_EQ(why, "cannot open tokenizer file /nonexistent/tokenizer.json");
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
