#include "examples/llm/tokenizer/sentencepiece.h"

#include <float.h>
#include <stdio.h>

#include <queue>

#include "examples/llm/tokenizer/protobuf.h"
#include "examples/llm/tokenizer/refusal.h"
#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, what a space becomes
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr float kUnkPenalty = 10.0f;

// ModelProto and the fields of its parts that this reader uses (sentencepiece_model.proto).
enum : uint32_t { kModelPieces = 1, kModelTrainerSpec = 2, kModelNormalizerSpec = 3, kModelDenormalizerSpec = 5 };
enum : uint32_t { kPieceText = 1, kPieceScore = 2, kPieceType = 3 };
enum : uint32_t {
  kTrainerModelType = 3,
  kTrainerTreatWhitespaceAsSuffix = 24,
  kTrainerByteFallback = 35,
  kTrainerUnkSurface = 44,
  kTrainerBosPiece = 46,
  kTrainerEosPiece = 47,
};
enum : uint32_t {
  kNormalizerName = 1,
  kNormalizerCharsmap = 2,
  kNormalizerAddDummyPrefix = 3,
  kNormalizerRemoveExtraWhitespaces = 4,
  kNormalizerEscapeWhitespaces = 5,
};
enum ModelType : uint32_t { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

// Refuses field `f` of `message` unless it has wire type `type`; `field` names it ("score").
Error expect_wire(const ProtoField& f, WireType type, const char* message, const char* field, std::string* why) {
  const unsigned have = static_cast<unsigned>(f.type), want = static_cast<unsigned>(type);
  EMBER_REFUSE_UNLESS(why, have == want, InvalidArgument,
                      "protobuf %s: field %u (%s) at byte %zu has wire type %u (%s), expected %u (%s)", message,
                      f.number, field, f.offset, have, wire_type_name(have), want, wire_type_name(want));
  return Error::Ok;
}

// "<0x41>" -> 0x41; -1 when `piece` is not of that form.
int byte_of_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = piece[i];
    if (c >= '0' && c <= '9') {
      v = v * 16 + (c - '0');
    } else if (c >= 'A' && c <= 'F') {
      v = v * 16 + (c - 'A' + 10);
    } else {
      return -1;
    }
  }
  return v;
}

// `piece` with each "▁" turned into a space.
std::string unescape(std::string_view piece) {
  std::string out;
  size_t pos = 0;
  while (pos < piece.size()) {
    if (piece.substr(pos, kSpaceSymbol.size()) == kSpaceSymbol) {
      out.push_back(' ');
      pos += kSpaceSymbol.size();
    } else {
      out.push_back(piece[pos++]);
    }
  }
  return out;
}

// Appends bytes decoded from byte pieces: well-formed UTF-8 as it is, any other byte as U+FFFD.
void flush_bytes(std::string* bytes, std::string* out) {
  size_t pos = 0;
  while (pos < bytes->size()) {
    size_t n;
    if (decode_utf8(std::string_view(*bytes).substr(pos), &n) == kInvalidCodePoint) {
      out->append(kReplacement);
      pos += 1;
    } else {
      out->append(*bytes, pos, n);
      pos += n;
    }
  }
  bytes->clear();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> SentencePieceTokenizer::load(std::string_view model, std::string* why) {
  std::unique_ptr<SentencePieceTokenizer> tok(new SentencePieceTokenizer());
  tok->why_ = why;
  EMBER_TRY(tok->parse(model));
  tok->why_ = nullptr;
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Error SentencePieceTokenizer::parse(std::string_view model) {
  EMBER_TRY_ASSIGN(fields, parse_proto(model, "ModelProto", why_));
  std::vector<size_t> piece_offsets;  // where each piece's field starts, for messages
  size_t charsmap_offset = 0;
  uint32_t model_type = kUnigram;
  size_t model_type_offset = 0;
  std::string bos_piece = "<s>", eos_piece = "</s>";
  std::string_view charsmap;
  for (const ProtoField& f : fields) {
    if (f.number == kModelPieces) {
      EMBER_TRY(expect_wire(f, WireType::kLengthDelimited, "ModelProto", "pieces", why_));
      char name[48];
      snprintf(name, sizeof(name), "ModelProto.pieces[%zu]", pieces_.size());
      EMBER_TRY_ASSIGN(pf, parse_proto(f.bytes, name, why_, f.value_offset));
      Piece p{std::string(), 0.0f, kNormal};
      for (const ProtoField& g : pf) {
        if (g.number == kPieceText) {
          EMBER_TRY(expect_wire(g, WireType::kLengthDelimited, name, "piece", why_));
          p.text = std::string(g.bytes);
        } else if (g.number == kPieceScore) {
          EMBER_TRY(expect_wire(g, WireType::kFixed32, name, "score", why_));
          p.score = g.as_float();
        } else if (g.number == kPieceType) {
          EMBER_TRY(expect_wire(g, WireType::kVarint, name, "type", why_));
          EMBER_REFUSE_UNLESS(why_, g.value >= kNormal && g.value <= kByte, InvalidArgument,
                              "SentencePiece model: %s.type at byte %zu: %llu is not a piece type (1 NORMAL to 6 BYTE)",
                              name, g.offset, static_cast<unsigned long long>(g.value));
          p.type = static_cast<PieceType>(g.value);
        }
      }
      EMBER_REFUSE_UNLESS(why_, !p.text.empty(), InvalidArgument,
                          "SentencePiece model: %s.piece (at byte %zu) is empty or missing", name, f.offset);
      pieces_.push_back(std::move(p));
      piece_offsets.push_back(f.offset);
    } else if (f.number == kModelTrainerSpec) {
      EMBER_TRY(expect_wire(f, WireType::kLengthDelimited, "ModelProto", "trainer_spec", why_));
      EMBER_TRY_ASSIGN(tf, parse_proto(f.bytes, "TrainerSpec", why_, f.value_offset));
      for (const ProtoField& g : tf) {
        if (g.number == kTrainerModelType) {
          EMBER_TRY(expect_wire(g, WireType::kVarint, "TrainerSpec", "model_type", why_));
          model_type = static_cast<uint32_t>(g.value);
          model_type_offset = g.offset;
        } else if (g.number == kTrainerByteFallback) {
          EMBER_TRY(expect_wire(g, WireType::kVarint, "TrainerSpec", "byte_fallback", why_));
          byte_fallback_ = g.as_bool();
        } else if (g.number == kTrainerTreatWhitespaceAsSuffix) {
          EMBER_TRY(expect_wire(g, WireType::kVarint, "TrainerSpec", "treat_whitespace_as_suffix", why_));
          EMBER_REFUSE_UNLESS(why_, !g.as_bool(), NotSupported,
                              "SentencePiece model: TrainerSpec.treat_whitespace_as_suffix (at byte %zu) is not "
                              "supported",
                              g.offset);
        } else if (g.number == kTrainerUnkSurface || g.number == kTrainerBosPiece || g.number == kTrainerEosPiece) {
          EMBER_TRY(expect_wire(g, WireType::kLengthDelimited, "TrainerSpec", "a piece name", why_));
          std::string& s = g.number == kTrainerUnkSurface ? unk_surface_
                           : g.number == kTrainerBosPiece ? bos_piece
                                                          : eos_piece;
          s = std::string(g.bytes);
        }
      }
    } else if (f.number == kModelNormalizerSpec || f.number == kModelDenormalizerSpec) {
      const bool denormalizer = f.number == kModelDenormalizerSpec;
      const char* spec = denormalizer ? "ModelProto.denormalizer_spec" : "ModelProto.normalizer_spec";
      EMBER_TRY(expect_wire(f, WireType::kLengthDelimited, "ModelProto", spec + 11, why_));
      EMBER_TRY_ASSIGN(nf, parse_proto(f.bytes, spec, why_, f.value_offset));
      for (const ProtoField& g : nf) {
        if (g.number == kNormalizerCharsmap) {
          EMBER_TRY(expect_wire(g, WireType::kLengthDelimited, spec, "precompiled_charsmap", why_));
          EMBER_REFUSE_UNLESS(why_, !denormalizer || g.bytes.empty(), NotSupported,
                              "SentencePiece model: %s.precompiled_charsmap (at byte %zu): a denormalizer is not "
                              "supported",
                              spec, g.offset);
          charsmap = g.bytes;
          charsmap_offset = g.value_offset;
        } else if (!denormalizer &&
                   (g.number == kNormalizerAddDummyPrefix || g.number == kNormalizerRemoveExtraWhitespaces ||
                    g.number == kNormalizerEscapeWhitespaces)) {
          EMBER_TRY(expect_wire(g, WireType::kVarint, spec, "a white space option", why_));
          bool& b = g.number == kNormalizerAddDummyPrefix           ? add_dummy_prefix_
                    : g.number == kNormalizerRemoveExtraWhitespaces ? remove_extra_whitespaces_
                                                                    : escape_whitespaces_;
          b = g.as_bool();
        }
      }
    }
  }

  switch (model_type) {
    case kUnigram: unigram_ = true; break;
    case kBpe: break;
    case kWord:
    case kChar:
      return refuse(why_, Error::NotSupported,
                    "SentencePiece model: TrainerSpec.model_type (at byte %zu): %s is not supported (only BPE and "
                    "UNIGRAM)",
                    model_type_offset, model_type == kWord ? "WORD" : "CHAR");
    default:
      return refuse(why_, Error::NotSupported,
                    "SentencePiece model: TrainerSpec.model_type (at byte %zu): unknown type %u (known: 1 UNIGRAM, "
                    "2 BPE, 3 WORD, 4 CHAR)",
                    model_type_offset, model_type);
  }
  EMBER_REFUSE_UNLESS(why_, !pieces_.empty(), InvalidArgument, "SentencePiece model: ModelProto.pieces: none");
  EMBER_REFUSE_UNLESS(why_, pieces_.size() < (1u << 30), InvalidArgument,
                      "SentencePiece model: ModelProto.pieces: %zu is over the limit of 2^30", pieces_.size());

  // Lookup tables (views into pieces_, which no longer changes).
  bool byte_found[256] = {};
  min_score_ = FLT_MAX;
  max_score_ = FLT_MIN;  // as the reference does: the largest score, but never below FLT_MIN
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    const int32_t id = static_cast<int32_t>(i);
    const bool ordinary = p.type == kNormal || p.type == kUserDefined || p.type == kUnused;
    auto& map = ordinary ? ordinary_ : reserved_;
    EMBER_REFUSE_UNLESS(why_, map.emplace(p.text, id).second, InvalidArgument,
                        "SentencePiece model: ModelProto.pieces[%d] (at byte %zu): \"%.40s\" is defined twice", id,
                        piece_offsets[i], p.text.c_str());
    if (ordinary && p.text.size() > max_piece_bytes_) max_piece_bytes_ = p.text.size();
    if (p.type == kNormal) {
      if (p.score < min_score_) min_score_ = p.score;
      if (p.score > max_score_) max_score_ = p.score;
    }
    if (p.type == kUserDefined) user_defined_.push_back(p.text);
    if (p.type == kUnknown) {
      EMBER_REFUSE_UNLESS(why_, unk_id_ < 0, InvalidArgument,
                          "SentencePiece model: ModelProto.pieces[%d] (at byte %zu): a second unknown piece (the "
                          "first is pieces[%d])",
                          id, piece_offsets[i], unk_id_);
      unk_id_ = id;
    }
    if (p.type == kByte) {
      const int b = byte_of_piece(p.text);
      EMBER_REFUSE_UNLESS(why_, b >= 0, InvalidArgument,
                          "SentencePiece model: ModelProto.pieces[%d] (at byte %zu): byte piece \"%.40s\" is not "
                          "<0xNN>",
                          id, piece_offsets[i], p.text.c_str());
      EMBER_REFUSE_UNLESS(why_, byte_fallback_, InvalidArgument,
                          "SentencePiece model: ModelProto.pieces[%d] (at byte %zu): byte piece \"%.40s\" although "
                          "TrainerSpec.byte_fallback is off",
                          id, piece_offsets[i], p.text.c_str());
      byte_found[b] = true;
      byte_ids_[b] = id;
    }
  }
  EMBER_REFUSE_UNLESS(why_, unk_id_ >= 0, InvalidArgument,
                      "SentencePiece model: ModelProto.pieces: no unknown piece (type UNKNOWN)");
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      EMBER_REFUSE_UNLESS(why_, byte_found[b], InvalidArgument,
                          "SentencePiece model: ModelProto.pieces: TrainerSpec.byte_fallback is on but byte piece "
                          "<0x%02X> is missing",
                          b);
    }
  }
  auto special = [this](const std::string& name) -> int32_t {
    auto it = reserved_.find(name);
    if (it != reserved_.end() && pieces_[it->second].type == kControl) return it->second;
    it = ordinary_.find(name);
    return it != ordinary_.end() && pieces_[it->second].type == kUserDefined ? it->second : -1;
  };
  bos_id_ = special(bos_piece);
  eos_id_ = special(eos_piece);

  if (!charsmap.empty()) {
    // A little-endian uint32 trie size, the trie (32-bit units), then NUL-terminated replacement strings.
    EMBER_REFUSE_UNLESS(why_, charsmap.size() > 4, InvalidArgument,
                        "SentencePiece model: normalizer_spec.precompiled_charsmap at byte %zu: %zu bytes is truncated "
                        "(a 4-byte trie size, then the trie)",
                        charsmap_offset, charsmap.size());
    const uint32_t trie_bytes = static_cast<uint32_t>(static_cast<uint8_t>(charsmap[0])) |
                                static_cast<uint32_t>(static_cast<uint8_t>(charsmap[1])) << 8 |
                                static_cast<uint32_t>(static_cast<uint8_t>(charsmap[2])) << 16 |
                                static_cast<uint32_t>(static_cast<uint8_t>(charsmap[3])) << 24;
    EMBER_REFUSE_UNLESS(why_, trie_bytes % 4 == 0 && trie_bytes > 0 && trie_bytes <= charsmap.size() - 4,
                        InvalidArgument,
                        "SentencePiece model: normalizer_spec.precompiled_charsmap at byte %zu: a trie of %u bytes "
                        "(not a positive multiple of 4, or over the %zu bytes that follow)",
                        charsmap_offset, trie_bytes, charsmap.size() - 4);
    trie_.resize(trie_bytes / 4);
    for (size_t i = 0; i < trie_.size(); ++i) {
      uint32_t v = 0;
      for (int k = 3; k >= 0; --k) v = v << 8 | static_cast<uint8_t>(charsmap[4 + 4 * i + k]);
      trie_[i] = v;
    }
    normalized_pool_ = std::string(charsmap.substr(4 + trie_bytes));
  }
  vocab_size_ = pieces_.size();
  return Error::Ok;
}

size_t SentencePieceTokenizer::user_defined_prefix(std::string_view text) const {
  size_t longest = 0;
  for (std::string_view u : user_defined_) {
    if (u.size() > longest && text.substr(0, u.size()) == u) longest = u.size();
  }
  return longest;
}

std::pair<std::string_view, size_t> SentencePieceTokenizer::normalize_prefix(std::string_view input) const {
  if (const size_t n = user_defined_prefix(input)) return {input.substr(0, n), n};
  size_t longest = 0;
  uint32_t value = 0;
  if (!trie_.empty()) {
    // Common-prefix search in the darts-clone double array; the longest of the first 32 matches wins.
    auto has_leaf = [](uint32_t unit) { return ((unit >> 8) & 1) == 1; };
    auto unit_value = [](uint32_t unit) { return unit & ((1u << 31) - 1); };
    auto label = [](uint32_t unit) { return unit & ((1u << 31) | 0xFF); };
    auto offset = [](uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); };
    size_t node = offset(trie_[0]);
    int found = 0;
    for (size_t i = 0; i < input.size(); ++i) {
      const uint8_t c = static_cast<uint8_t>(input[i]);
      node ^= c;
      if (node >= trie_.size()) break;
      const uint32_t unit = trie_[node];
      if (label(unit) != c) break;
      node ^= offset(unit);
      if (node >= trie_.size()) break;
      if (has_leaf(unit)) {
        if (found < 32 && i + 1 > longest) {
          longest = i + 1;
          value = unit_value(trie_[node]);
        }
        ++found;
      }
    }
  }
  if (longest > 0 && value < normalized_pool_.size()) {
    const size_t end = normalized_pool_.find('\0', value);
    const std::string_view pool(normalized_pool_);
    return {pool.substr(value, (end == std::string::npos ? pool.size() : end) - value), longest};
  }
  size_t n;
  if (decode_utf8(input, &n) == kInvalidCodePoint) return {kReplacement, 1};
  return {input.substr(0, n), n};
}

std::string SentencePieceTokenizer::normalize(std::string_view input) const {
  std::string out;
  if (remove_extra_whitespaces_) {
    while (!input.empty()) {
      const auto p = normalize_prefix(input);
      if (p.first != " ") break;
      input.remove_prefix(p.second);
    }
  }
  if (input.empty()) return out;
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : std::string_view(" ");
  if (add_dummy_prefix_) out.append(space);
  bool prev_space = remove_extra_whitespaces_;
  while (!input.empty()) {
    const auto p = normalize_prefix(input);
    std::string_view s = p.first;
    if (prev_space) {
      while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
    }
    if (!s.empty()) {
      for (char c : s) {
        if (escape_whitespaces_ && c == ' ') {
          out.append(kSpaceSymbol);
        } else {
          out.push_back(c);
        }
      }
      prev_space = s.back() == ' ';
    }
    input.remove_prefix(p.second);
    if (!remove_extra_whitespaces_) prev_space = false;
  }
  if (remove_extra_whitespaces_) {
    while (out.size() >= space.size() && std::string_view(out).substr(out.size() - space.size()) == space) {
      out.resize(out.size() - space.size());
    }
  }
  return out;
}

int32_t SentencePieceTokenizer::lookup(std::string_view piece) const {
  auto it = reserved_.find(piece);
  if (it != reserved_.end()) return it->second;
  it = ordinary_.find(piece);
  return it != ordinary_.end() ? it->second : unk_id_;
}

void SentencePieceTokenizer::encode_bpe(std::string_view text,
                                        std::vector<std::pair<std::string_view, int32_t>>* out) const {
  struct Symbol {
    int32_t prev;
    int32_t next;
    bool freeze;
    std::string_view piece;
  };
  std::vector<Symbol> symbols;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = user_defined_prefix(text.substr(pos));
    const bool freeze = n > 0;
    if (!freeze) {
      n = utf8_sequence_length(static_cast<uint8_t>(text[pos]));
      if (static_cast<uint8_t>(text[pos]) >= 0xF8) n = 4;  // the reference's length table
      if (n > text.size() - pos) n = text.size() - pos;
    }
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{index - 1, pos + n < text.size() ? index + 1 : -1, freeze, text.substr(pos, n)});
    pos += n;
  }

  // Highest score first, then leftmost.
  struct Pair {
    float score;
    int32_t left;
    int32_t right;
    size_t size;
    bool operator<(const Pair& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  std::priority_queue<Pair> agenda;
  std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> rev_merge;
  auto add_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].freeze || symbols[right].freeze) return;
    const std::string_view piece(symbols[left].piece.data(), symbols[left].piece.size() + symbols[right].piece.size());
    auto it = ordinary_.find(piece);
    if (it == ordinary_.end()) return;
    agenda.push(Pair{pieces_[it->second].score, left, right, piece.size()});
    if (pieces_[it->second].type == kUnused) rev_merge[piece] = {symbols[left].piece, symbols[right].piece};
  };
  for (size_t i = 1; i < symbols.size(); ++i) add_pair(static_cast<int32_t>(i) - 1, static_cast<int32_t>(i));
  while (!agenda.empty()) {
    const Pair top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.piece.empty() || right.piece.empty() || left.piece.size() + right.piece.size() != top.size) continue;
    left.piece = std::string_view(left.piece.data(), top.size);
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.piece = std::string_view();
    add_pair(left.prev, top.left);
    add_pair(top.left, left.next);
  }

  // A merged piece that is unused in the vocabulary is split back into the pieces it was made of.
  std::vector<std::string_view> stack;
  for (int32_t i = 0; i >= 0 && !symbols.empty(); i = symbols[i].next) {
    stack.push_back(symbols[i].piece);
    while (!stack.empty()) {
      const std::string_view w = stack.back();
      stack.pop_back();
      const int32_t id = lookup(w);
      auto it = pieces_[id].type == kUnused ? rev_merge.find(w) : rev_merge.end();
      if (it == rev_merge.end()) {
        out->emplace_back(w, id);
      } else {
        stack.push_back(it->second.second);
        stack.push_back(it->second.first);
      }
    }
  }
}

void SentencePieceTokenizer::encode_unigram(std::string_view text,
                                            std::vector<std::pair<std::string_view, int32_t>>* out) const {
  struct Best {
    int32_t id = -1;
    float score = 0;
    int64_t starts_at = -1;
  };
  const size_t size = text.size();
  const float unk_score = min_score_ - kUnkPenalty;
  std::vector<Best> best(size + 1);
  size_t start = 0;
  while (start < size) {
    const float till_here = best[start].score;
    size_t mblen = utf8_sequence_length(static_cast<uint8_t>(text[start]));
    if (static_cast<uint8_t>(text[start]) >= 0xF8) mblen = 4;
    if (mblen > size - start) mblen = size - start;
    bool has_single = false;
    for (size_t len = 1; len <= max_piece_bytes_ && start + len <= size; ++len) {
      auto it = ordinary_.find(text.substr(start, len));
      if (it == ordinary_.end()) continue;
      const Piece& p = pieces_[it->second];
      if (p.type == kUnused) continue;
      // A user-defined symbol gets a bonus that makes it win (the reference's formula). All sums are in float, as
      // in the reference: in double, near-ties between segmentations resolve differently.
      const float score = p.type == kUserDefined ? static_cast<float>(len) * max_score_ - 0.1f : p.score;
      const float candidate = score + till_here;
      Best& target = best[start + len];
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = candidate;
        target.starts_at = static_cast<int64_t>(start);
        target.id = it->second;
      }
      if (len == mblen) has_single = true;
    }
    if (!has_single) {
      Best& target = best[start + mblen];
      const float candidate = unk_score + till_here;
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = candidate;
        target.starts_at = static_cast<int64_t>(start);
        target.id = unk_id_;
      }
    }
    start += mblen;
  }
  std::vector<std::pair<std::string_view, int32_t>> reversed;
  for (size_t end = size; end > 0;) {
    const Best& b = best[end];
    const size_t begin = static_cast<size_t>(b.starts_at);
    reversed.emplace_back(text.substr(begin, end - begin), b.id);
    end = begin;
  }
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) out->push_back(*it);
}

Result<std::vector<int32_t>> SentencePieceTokenizer::encode(std::string_view text, bool bos, bool eos) const {
  EMBER_CHECK_OR_RETURN_ERROR(!bos || bos_id_ >= 0, InvalidState, "encode: BOS asked for, but this tokenizer has none");
  EMBER_CHECK_OR_RETURN_ERROR(!eos || eos_id_ >= 0, InvalidState, "encode: EOS asked for, but this tokenizer has none");
  const std::string normalized = normalize(text);
  std::vector<std::pair<std::string_view, int32_t>> pieces;
  if (unigram_) {
    encode_unigram(normalized, &pieces);
  } else {
    encode_bpe(normalized, &pieces);
  }
  std::vector<int32_t> ids;
  ids.reserve(pieces.size() + 2);
  if (bos) ids.push_back(bos_id_);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int32_t id = pieces[i].second;
    if (id == unk_id_ && byte_fallback_) {
      for (char c : pieces[i].first) ids.push_back(byte_ids_[static_cast<uint8_t>(c)]);
    } else if (id == unk_id_ && i > 0 && pieces[i - 1].second == unk_id_) {
      continue;  // a run of unknown pieces is one unknown token, as in the reference
    } else {
      ids.push_back(id);
    }
  }
  if (eos) ids.push_back(eos_id_);
  return ids;
}

Result<std::string> SentencePieceTokenizer::id_to_piece(int32_t id) const {
  EMBER_CHECK_OR_RETURN_ERROR(id >= 0 && static_cast<size_t>(id) < pieces_.size(), InvalidArgument,
                              "token id %d is outside the vocabulary [0, %zu)", id, pieces_.size());
  return pieces_[id].text;
}

int32_t SentencePieceTokenizer::piece_to_id(std::string_view piece) const {
  auto it = reserved_.find(piece);
  if (it != reserved_.end()) return it->second;
  it = ordinary_.find(piece);
  return it != ordinary_.end() ? it->second : -1;
}

Result<std::string> SentencePieceTokenizer::decode(int32_t prev, int32_t id) const {
  EMBER_CHECK_OR_RETURN_ERROR(id >= 0 && static_cast<size_t>(id) < pieces_.size(), InvalidArgument,
                              "token id %d is outside the vocabulary [0, %zu)", id, pieces_.size());
  const Piece& p = pieces_[id];
  switch (p.type) {
    case kControl: return std::string();
    case kUnknown: return unk_surface_;
    case kByte: return std::string(1, static_cast<char>(byte_of_piece(p.text)));
    default: break;
  }
  std::string s = unescape(p.text);
  if ((prev < 0 || prev == bos_id_) && (add_dummy_prefix_ || remove_extra_whitespaces_) && !s.empty() && s[0] == ' ') {
    s.erase(0, 1);
  }
  return s;
}

Result<std::string> SentencePieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  (void)skip_special;
  std::string out, bytes;
  bool at_start = true;
  for (int32_t id : ids) {
    EMBER_CHECK_OR_RETURN_ERROR(id >= 0 && static_cast<size_t>(id) < pieces_.size(), InvalidArgument,
                                "token id %d is outside the vocabulary [0, %zu)", id, pieces_.size());
    const Piece& p = pieces_[id];
    if (p.type == kByte) {
      bytes.push_back(static_cast<char>(byte_of_piece(p.text)));
      continue;
    }
    if (!bytes.empty()) {
      flush_bytes(&bytes, &out);
      at_start = false;
    }
    if (p.type == kControl) continue;  // control pieces (<s>, </s>) never show, skip_special or not
    if (p.type == kUnknown) {
      out += unk_surface_;
      at_start = false;
      continue;
    }
    std::string_view piece = p.text;
    if (at_start && (add_dummy_prefix_ || remove_extra_whitespaces_) && piece.substr(0, 3) == kSpaceSymbol) {
      piece.remove_prefix(kSpaceSymbol.size());
    }
    const std::string s = unescape(piece);
    out += s;
    at_start = false;
  }
  flush_bytes(&bytes, &out);
  return out;
}

}  // namespace llm
}  // namespace ember
