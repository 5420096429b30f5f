#include "examples/llm/tokenizer/hf_tokenizer.h"

#include <stdio.h>

#include <queue>

#include "examples/llm/tokenizer/byte_level.h"
#include "examples/llm/tokenizer/refusal.h"
#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace {

// The member `key` of `obj` as a string, or nullptr when absent or null; `*bad` when present and of another kind.
const std::string* optional_string(const JsonValue& obj, const char* key, bool* bad) {
  const JsonValue* v = obj.find(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_string()) {
    *bad = true;
    return nullptr;
  }
  return &v->as_string();
}

bool optional_bool(const JsonValue& obj, const char* key, bool fallback) {
  const JsonValue* v = obj.find(key);
  return v != nullptr && v->is_bool() ? v->as_bool() : fallback;
}

// The type name of a component ({"type": "..."}), or "" when it has none.
std::string type_of(const JsonValue& v) {
  const JsonValue* t = v.find("type");
  return t != nullptr && t->is_string() ? t->as_string() : std::string();
}

// `s` for an error message: at most 40 bytes, quotes, backslashes and bytes outside printable ASCII escaped.
std::string quoted(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[8];
      snprintf(escaped, sizeof(escaped), "\\x%02X", c);
      out += escaped;
    }
  }
  if (s.size() > 40) out += "...";
  return out;
}

// The last code point of text[0, end), or kInvalidCodePoint when there is none.
uint32_t code_point_before(std::string_view text, size_t end) {
  if (end == 0) return kInvalidCodePoint;
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  size_t n;
  const uint32_t cp = decode_utf8(text.substr(start, end - start), &n);
  return start + n == end ? cp : kInvalidCodePoint;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> HfTokenizer::load(std::string_view json, std::string_view config_json,
                                                     std::string* why) {
  std::string syntax;
  auto root = parse_json(json, &syntax);
  if (!root.ok()) return refuse(why, root.error(), "tokenizer.json: %s", syntax.c_str());
  std::unique_ptr<HfTokenizer> tok(new HfTokenizer());
  tok->why_ = why;
  EMBER_TRY(tok->parse(*root));
  tok->why_ = nullptr;
  tok->find_bos_eos(*root, config_json);
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Error HfTokenizer::parse(const JsonValue& root) {
  EMBER_REFUSE_UNLESS(why_, root.is_object(), InvalidArgument, "tokenizer.json: the document is a %s, not an object",
                      root.kind_name());
  const JsonValue* model = root.find("model");
  EMBER_REFUSE_UNLESS(why_, model != nullptr && model->is_object(), InvalidArgument,
                      "tokenizer.json: model: expected an object, found %s",
                      model == nullptr ? "nothing" : model->kind_name());
  // Ids index tables, so they are bounded by what the file holds: a real tokenizer numbers its tokens densely.
  const JsonValue* vocab = model->find("vocab");
  const JsonValue* added = root.find("added_tokens");
  size_t entries = vocab != nullptr ? vocab->members().size() : 0;
  entries += added != nullptr ? added->items().size() : 0;
  id_limit_ = static_cast<int64_t>(entries < kMaxIds - kIdSlack ? entries + kIdSlack : kMaxIds);
  EMBER_TRY(parse_model(*model));

  const JsonValue* normalizer = root.find("normalizer");
  if (normalizer != nullptr && !normalizer->is_null()) {
    const std::string type = type_of(*normalizer);
    const JsonValue* list = normalizer->find("normalizers");
    const bool empty_sequence = type == "Sequence" && list != nullptr && list->is_array() && list->items().empty();
    // NFC leaves text that is already in NFC unchanged, and nearly all text is; see README.md.
    EMBER_REFUSE_UNLESS(why_, empty_sequence || type == "NFC", NotSupported,
                        "tokenizer.json: normalizer.type \"%s\" is not supported (only none, or NFC)",
                        quoted(type).c_str());
  }

  const JsonValue* pre = root.find("pre_tokenizer");
  EMBER_REFUSE_UNLESS(why_, pre != nullptr && pre->is_object(), NotSupported,
                      "tokenizer.json: pre_tokenizer: expected an object, found %s; only byte-level BPE (a ByteLevel "
                      "pre-tokenizer) is supported",
                      pre == nullptr ? "nothing" : pre->kind_name());
  EMBER_TRY(parse_pre_tokenizer(*pre));

  const JsonValue* decoder = root.find("decoder");
  if (decoder != nullptr && !decoder->is_null()) {
    const std::string type = type_of(*decoder);
    EMBER_REFUSE_UNLESS(why_, type == "ByteLevel", NotSupported,
                        "tokenizer.json: decoder.type \"%s\" is not supported (only ByteLevel)", quoted(type).c_str());
  }

  if (added != nullptr && !added->is_null()) EMBER_TRY(parse_added_tokens(*added));

  // Decoded bytes of every id: the byte-level vocabulary mapped back to bytes, added tokens as written.
  bytes_.assign(pieces_.size(), std::string());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    std::string b;
    bytes_[id] = byte_level_to_bytes(pieces_[id], &b) ? b : pieces_[id];
  }
  for (const AddedToken& t : added_) bytes_[t.id] = t.content;
  special_.assign(pieces_.size(), 0);
  for (const AddedToken& t : added_) {
    special_[t.id] = t.special ? 1 : 0;
    first_byte_[t.normalized ? 1 : 0][static_cast<uint8_t>(t.content[0])] = true;
  }
  vocab_size_ = pieces_.size();
  return Error::Ok;
}

Error HfTokenizer::parse_model(const JsonValue& model) {
  const std::string type = type_of(model);
  EMBER_REFUSE_UNLESS(why_, type == "BPE" || (type.empty() && model.find("merges") != nullptr), NotSupported,
                      "tokenizer.json: model.type \"%s\" is not supported (only \"BPE\")", quoted(type).c_str());
  bool bad = false;
  const std::string* prefix = optional_string(model, "continuing_subword_prefix", &bad);
  const std::string* suffix = optional_string(model, "end_of_word_suffix", &bad);
  EMBER_REFUSE_UNLESS(why_, !bad && (prefix == nullptr || prefix->empty()) && (suffix == nullptr || suffix->empty()),
                      NotSupported,
                      "tokenizer.json: model.continuing_subword_prefix or model.end_of_word_suffix: BPE with either "
                      "is not supported");
  EMBER_REFUSE_UNLESS(why_, !optional_bool(model, "byte_fallback", false), NotSupported,
                      "tokenizer.json: model.byte_fallback: BPE byte fallback (SentencePiece-converted models) is not "
                      "supported; load the model's tokenizer.model instead");
  fuse_unk_ = optional_bool(model, "fuse_unk", false);
  ignore_merges_ = optional_bool(model, "ignore_merges", false);

  const JsonValue* vocab = model.find("vocab");
  EMBER_REFUSE_UNLESS(why_, vocab != nullptr && vocab->is_object(), InvalidArgument,
                      "tokenizer.json: model.vocab: expected an object, found %s",
                      vocab == nullptr ? "nothing" : vocab->kind_name());
  vocab_.reserve(vocab->members().size());
  for (const auto& m : vocab->members()) {
    EMBER_TRY(check_id(m.second, "model.vocab", ("\"" + quoted(m.first) + "\"").c_str()));
    const int32_t id = static_cast<int32_t>(m.second.as_int());
    vocab_[m.first] = id;
    if (static_cast<size_t>(id) >= pieces_.size()) pieces_.resize(id + 1);
    pieces_[id] = m.first;
  }

  const std::string* unk = optional_string(model, "unk_token", &bad);
  EMBER_REFUSE_UNLESS(why_, !bad, InvalidArgument, "tokenizer.json: model.unk_token: expected a string or null");
  if (unk != nullptr) {
    auto it = vocab_.find(*unk);
    EMBER_REFUSE_UNLESS(why_, it != vocab_.end(), InvalidArgument,
                        "tokenizer.json: model.unk_token: \"%s\" is not in model.vocab", quoted(*unk).c_str());
    unk_id_ = it->second;
  }

  const JsonValue* merges = model.find("merges");
  EMBER_REFUSE_UNLESS(why_, merges != nullptr && merges->is_array(), InvalidArgument,
                      "tokenizer.json: model.merges: expected an array, found %s",
                      merges == nullptr ? "nothing" : merges->kind_name());
  merges_.reserve(merges->items().size());
  int32_t rank = 0;
  for (const JsonValue& m : merges->items()) {
    std::string left, right;
    if (m.is_string()) {
      const std::string& s = m.as_string();
      const size_t space = s.find(' ');
      EMBER_REFUSE_UNLESS(why_, space != std::string::npos && s.find(' ', space + 1) == std::string::npos,
                          InvalidArgument, "tokenizer.json: model.merges[%d]: \"%s\" is not two tokens and a space",
                          rank, quoted(s).c_str());
      left = s.substr(0, space), right = s.substr(space + 1);
    } else {
      EMBER_REFUSE_UNLESS(why_,
                          m.is_array() && m.items().size() == 2 && m.items()[0].is_string() && m.items()[1].is_string(),
                          InvalidArgument,
                          "tokenizer.json: model.merges[%d]: expected \"a b\" or [\"a\", \"b\"], found %s", rank,
                          m.kind_name());
      left = m.items()[0].as_string(), right = m.items()[1].as_string();
    }
    auto l = vocab_.find(left), r = vocab_.find(right), lr = vocab_.find(left + right);
    EMBER_REFUSE_UNLESS(why_, l != vocab_.end() && r != vocab_.end() && lr != vocab_.end(), InvalidArgument,
                        "tokenizer.json: model.merges[%d]: \"%s\" missing from model.vocab (merging \"%s\" and "
                        "\"%s\")",
                        rank,
                        quoted(l == vocab_.end()   ? left
                               : r == vocab_.end() ? right
                                                   : left + right)
                            .c_str(),
                        quoted(left).c_str(), quoted(right).c_str());
    merges_.emplace(pair_key(l->second, r->second), Merge{rank, lr->second});  // the first rank of a pair wins
    ++rank;
  }
  return Error::Ok;
}

Error HfTokenizer::check_id(const JsonValue& id, const char* path, const char* key) const {
  EMBER_REFUSE_UNLESS(why_, id.is_integer(), InvalidArgument, "tokenizer.json: %s[%s]: the id is a %s, not an integer",
                      path, key, id.kind_name());
  EMBER_REFUSE_UNLESS(why_, id.as_int() >= 0 && id.as_int() < id_limit_, InvalidArgument,
                      "tokenizer.json: %s[%s]: id %lld is outside [0, %lld) (the limit: the file's %lld vocabulary "
                      "entries and added tokens plus %lld)",
                      path, key, static_cast<long long>(id.as_int()), static_cast<long long>(id_limit_),
                      static_cast<long long>(id_limit_ - kIdSlack), static_cast<long long>(kIdSlack));
  return Error::Ok;
}

Error HfTokenizer::parse_pre_tokenizer(const JsonValue& pre) {
  std::vector<const JsonValue*> steps;
  const bool sequence = type_of(pre) == "Sequence";
  if (sequence) {
    const JsonValue* list = pre.find("pretokenizers");
    EMBER_REFUSE_UNLESS(why_, list != nullptr && list->is_array(), InvalidArgument,
                        "tokenizer.json: pre_tokenizer.pretokenizers: expected an array in a Sequence, found %s",
                        list == nullptr ? "nothing" : list->kind_name());
    for (const JsonValue& s : list->items()) steps.push_back(&s);
  } else {
    steps.push_back(&pre);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const JsonValue& s = *steps[i];
    const std::string type = type_of(s);
    char path[64];
    if (sequence) {
      snprintf(path, sizeof(path), "pre_tokenizer.pretokenizers[%zu]", i);
    } else {
      snprintf(path, sizeof(path), "pre_tokenizer");
    }
    PreTokenizerStep step{};
    if (type == "ByteLevel") {
      step.byte_level = true;
      step.use_regex = optional_bool(s, "use_regex", true);
      step.add_prefix_space = optional_bool(s, "add_prefix_space", true);
      step.pattern = SplitPattern::kGpt2;
      EMBER_REFUSE_UNLESS(why_, i + 1 == steps.size(), NotSupported,
                          "tokenizer.json: %s: ByteLevel must be the last step (%zu steps)", path, steps.size());
    } else if (type == "Split") {
      const JsonValue* pattern = s.find("pattern");
      const JsonValue* regex = pattern != nullptr ? pattern->find("Regex") : nullptr;
      EMBER_REFUSE_UNLESS(why_, regex != nullptr && regex->is_string(), NotSupported,
                          "tokenizer.json: %s.pattern.Regex: expected a string (splitting on anything else is not "
                          "supported)",
                          path);
      EMBER_REFUSE_UNLESS(why_, split_pattern_from_regex(regex->as_string(), &step.pattern), NotSupported,
                          "tokenizer.json: %s.pattern.Regex: \"%s\" is none of GPT-2's, Llama-3's or Qwen2's patterns",
                          path, quoted(regex->as_string()).c_str());
      const JsonValue* behavior = s.find("behavior");
      EMBER_REFUSE_UNLESS(why_,
                          behavior != nullptr && behavior->is_string() && behavior->as_string() == "Isolated" &&
                              !optional_bool(s, "invert", false),
                          NotSupported,
                          "tokenizer.json: %s.behavior: only Split behavior \"Isolated\" without invert is supported",
                          path);
    } else {
      return refuse(why_, Error::NotSupported,
                    "tokenizer.json: %s.type \"%s\" is not supported (only ByteLevel and Split)", path,
                    quoted(type).c_str());
    }
    pre_.push_back(step);
  }
  EMBER_REFUSE_UNLESS(why_, !pre_.empty() && pre_.back().byte_level, NotSupported,
                      "tokenizer.json: pre_tokenizer: no ByteLevel step; only byte-level BPE is supported");
  return Error::Ok;
}

Error HfTokenizer::parse_added_tokens(const JsonValue& added) {
  EMBER_REFUSE_UNLESS(why_, added.is_array(), InvalidArgument,
                      "tokenizer.json: added_tokens: expected an array, found %s", added.kind_name());
  for (size_t i = 0; i < added.items().size(); ++i) {
    const JsonValue& t = added.items()[i];
    EMBER_REFUSE_UNLESS(why_, t.is_object(), InvalidArgument,
                        "tokenizer.json: added_tokens[%zu]: expected an object, found %s", i, t.kind_name());
    const JsonValue* id = t.find("id");
    const JsonValue* content = t.find("content");
    EMBER_REFUSE_UNLESS(why_, id != nullptr, InvalidArgument, "tokenizer.json: added_tokens[%zu].id: missing", i);
    char index[24];
    snprintf(index, sizeof(index), "%zu", i);
    EMBER_TRY(check_id(*id, "added_tokens", index));
    EMBER_REFUSE_UNLESS(why_, content != nullptr && content->is_string() && !content->as_string().empty(),
                        InvalidArgument, "tokenizer.json: added_tokens[%zu].content: expected a non-empty string", i);
    AddedToken tok;
    tok.content = content->as_string();
    tok.id = static_cast<int32_t>(id->as_int());
    tok.special = optional_bool(t, "special", false);
    tok.normalized = optional_bool(t, "normalized", !tok.special);
    tok.lstrip = optional_bool(t, "lstrip", false);
    tok.rstrip = optional_bool(t, "rstrip", false);
    tok.single_word = optional_bool(t, "single_word", false);
    if (static_cast<size_t>(tok.id) >= pieces_.size()) pieces_.resize(tok.id + 1);
    pieces_[tok.id] = tok.content;
    added_.push_back(std::move(tok));
  }
  return Error::Ok;
}

void HfTokenizer::find_bos_eos(const JsonValue& root, std::string_view config_json) {
  // 1. The post-processor's template: special tokens before the sequence are BOS, after it EOS.
  const JsonValue* post = root.find("post_processor");
  std::vector<const JsonValue*> processors;
  if (post != nullptr && type_of(*post) == "Sequence") {
    const JsonValue* list = post->find("processors");
    if (list != nullptr && list->is_array()) {
      for (const JsonValue& p : list->items()) processors.push_back(&p);
    }
  } else if (post != nullptr) {
    processors.push_back(post);
  }
  for (const JsonValue* p : processors) {
    const JsonValue* single = type_of(*p) == "TemplateProcessing" ? p->find("single") : nullptr;
    if (single == nullptr || !single->is_array()) continue;
    bool seen_sequence = false;
    for (const JsonValue& piece : single->items()) {
      if (piece.find("Sequence") != nullptr) {
        seen_sequence = true;
        continue;
      }
      const JsonValue* special = piece.find("SpecialToken");
      const JsonValue* name = special != nullptr ? special->find("id") : nullptr;
      if (name == nullptr || !name->is_string()) continue;
      const int32_t id = piece_to_id(name->as_string());
      if (id < 0) continue;
      if (!seen_sequence && bos_id_ < 0) bos_id_ = id;
      if (seen_sequence && eos_id_ < 0) eos_id_ = id;
    }
  }
  // 2. Well-known names among the added tokens.
  const char* const bos_names[] = {"<|begin_of_text|>", "<s>", "<|startoftext|>", "<bos>", "<|endoftext|>"};
  const char* const eos_names[] = {"<|end_of_text|>", "</s>", "<|endoftext|>", "<eos>", "<|im_end|>"};
  for (const char* name : bos_names) {
    if (bos_id_ < 0) bos_id_ = piece_to_id(name);
  }
  for (const char* name : eos_names) {
    if (eos_id_ < 0) eos_id_ = piece_to_id(name);
  }
  // 3. tokenizer_config.json names them outright.
  if (config_json.empty()) return;
  std::string ignored;  // a malformed tokenizer_config.json names nothing; tokenizer.json's choice stands
  auto config = parse_json(config_json, &ignored);
  if (!config.ok() || !config->is_object()) return;
  auto named = [&](const char* key) -> int32_t {
    const JsonValue* v = config->find(key);
    if (v != nullptr && v->is_object()) v = v->find("content");
    return v != nullptr && v->is_string() ? piece_to_id(v->as_string()) : -1;
  };
  if (named("bos_token") >= 0) bos_id_ = named("bos_token");
  if (named("eos_token") >= 0) eos_id_ = named("eos_token");
}

int32_t HfTokenizer::piece_to_id(std::string_view piece) const {
  for (const AddedToken& t : added_) {
    if (t.content == piece) return t.id;
  }
  auto it = vocab_.find(std::string(piece));
  return it == vocab_.end() ? -1 : it->second;
}

Result<std::string> HfTokenizer::id_to_piece(int32_t id) const {
  EMBER_CHECK_OR_RETURN_ERROR(id >= 0 && static_cast<size_t>(id) < pieces_.size(), InvalidArgument,
                              "token id %d is outside the vocabulary [0, %zu)", id, pieces_.size());
  return pieces_[id];
}

// Leftmost-longest matches of the added tokens whose `normalized` flag is `normalized`, in text[begin, end);
// lstrip/rstrip widen a match over the white space beside it, single_word drops one inside a word.
void HfTokenizer::split_added(std::string_view text, bool normalized, std::vector<Segment>* segments) const {
  size_t start_offset = 0;
  size_t pos = 0;
  const bool* first = first_byte_[normalized ? 1 : 0];
  while (pos < text.size()) {
    if (!first[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const AddedToken* best = nullptr;
    for (const AddedToken& t : added_) {
      if (t.normalized != normalized || t.content.size() > text.size() - pos) continue;
      if ((best == nullptr || t.content.size() > best->content.size()) &&
          text.compare(pos, t.content.size(), t.content) == 0) {
        best = &t;
      }
    }
    if (best == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + best->content.size();
    pos = stop;
    if (best->single_word) {
      size_t n;
      const bool word_before = is_word_char(code_point_before(text, start));
      const bool word_after = stop < text.size() && is_word_char(decode_utf8(text.substr(stop), &n));
      if (word_before || word_after) continue;
    }
    if (best->lstrip) {
      while (start > start_offset && is_whitespace(code_point_before(text, start))) {
        size_t back = 1;
        while (back < start && (static_cast<uint8_t>(text[start - back]) & 0xC0) == 0x80) ++back;
        start -= back;
      }
    }
    if (best->rstrip) {
      size_t n;
      while (stop < text.size() && is_whitespace(decode_utf8(text.substr(stop), &n))) stop += n;
      pos = stop;
    }
    if (start_offset < start) segments->push_back(Segment{-1, start_offset, start});
    segments->push_back(Segment{best->id, start, stop});
    start_offset = stop;
  }
  if (start_offset < text.size()) segments->push_back(Segment{-1, start_offset, text.size()});
}

Result<std::vector<int32_t>> HfTokenizer::encode(std::string_view text, bool bos, bool eos) const {
  EMBER_CHECK_OR_RETURN_ERROR(!bos || bos_id_ >= 0, InvalidState, "encode: BOS asked for, but this tokenizer has none");
  EMBER_CHECK_OR_RETURN_ERROR(!eos || eos_id_ >= 0, InvalidState, "encode: EOS asked for, but this tokenizer has none");
  EMBER_CHECK_OR_RETURN_ERROR(text.size() < (1u << 31), InvalidArgument, "encode: %zu bytes of text is over 2 GiB",
                              text.size());
  std::vector<int32_t> ids;
  if (bos) ids.push_back(bos_id_);
  // Added tokens that are not normalized are found in the raw text first, then normalized ones in what is left
  // (normalization is the identity here, see parse()).
  std::vector<Segment> raw;
  split_added(text, false, &raw);
  for (const Segment& r : raw) {
    if (r.id >= 0) {
      ids.push_back(r.id);
      continue;
    }
    const std::string_view part = text.substr(r.begin, r.end - r.begin);
    std::vector<Segment> segments;
    split_added(part, true, &segments);
    for (const Segment& s : segments) {
      if (s.id >= 0) {
        ids.push_back(s.id);
      } else {
        encode_text(part.substr(s.begin, s.end - s.begin), &ids);
      }
    }
  }
  if (eos) ids.push_back(eos_id_);
  return ids;
}

void HfTokenizer::encode_text(std::string_view text, std::vector<int32_t>* ids) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const PreTokenizerStep& step : pre_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.byte_level && step.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
      if (step.byte_level && !step.use_regex) {
        next.push_back(std::move(piece));
        continue;
      }
      for (const ByteRange& r : split_text(piece, step.pattern))
        next.push_back(piece.substr(r.first, r.second - r.first));
    }
    pieces.swap(next);
  }
  for (const std::string& piece : pieces) encode_word(bytes_to_byte_level(piece), ids);
}

void HfTokenizer::encode_word(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(std::string(word));
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool removed;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  size_t pos = 0;
  while (pos < word.size()) {
    size_t n;
    (void)decode_utf8(word.substr(pos), &n);
    auto it = vocab_.find(std::string(word.substr(pos, n)));
    pos += n;
    int32_t id;
    if (it != vocab_.end()) {
      id = it->second;
    } else if (unk_id_ >= 0) {
      if (fuse_unk_ && !symbols.empty() && symbols.back().id == unk_id_) continue;
      id = unk_id_;
    } else {
      continue;  // a character with no token and no unknown token is dropped, as the reference does
    }
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, index + 1, false});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // Lowest rank first, then leftmost.
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t merged;
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate> queue;
  auto push = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, left, it->second.merged});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.merged != top.merged) continue;  // stale: a side has changed
    left.id = top.merged;
    right.removed = true;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    push(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (!s.removed) ids->push_back(s.id);
  }
}

Result<std::string> HfTokenizer::decode(int32_t prev, int32_t id) const {
  (void)prev;
  EMBER_CHECK_OR_RETURN_ERROR(id >= 0 && static_cast<size_t>(id) < bytes_.size(), InvalidArgument,
                              "token id %d is outside the vocabulary [0, %zu)", id, bytes_.size());
  return bytes_[id];
}

Result<std::string> HfTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    EMBER_CHECK_OR_RETURN_ERROR(id >= 0 && static_cast<size_t>(id) < bytes_.size(), InvalidArgument,
                                "token id %d is outside the vocabulary [0, %zu)", id, bytes_.size());
    if (skip_special && special_[id]) continue;
    out += bytes_[id];
  }
  return out;
}

}  // namespace llm
}  // namespace ember
