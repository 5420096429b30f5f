#include "examples/llm/grammar/grammar.h"

#include <stdio.h>

#include <algorithm>
#include <unordered_map>

namespace ember {
namespace llm {

size_t encode_utf8(uint32_t cp, uint8_t buf[4]) {
  if (cp < 0x80) {
    buf[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    buf[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    buf[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp < 0x10000) {
    buf[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    buf[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    buf[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  if (cp > 0x10FFFF) return 0;
  buf[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  buf[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  buf[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  buf[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

namespace {

size_t utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// lo..hi encode to the same number of bytes and contain no surrogate.
void same_length_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  const size_t n = utf8_length(lo);
  // Split until, byte by byte, the range is a product of byte ranges: every continuation byte below the first
  // position where lo and hi differ must span its whole 0x80..0xBF range.
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      same_length_sequences(lo, lo | m, out);
      same_length_sequences((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      same_length_sequences(lo, (hi & ~m) - 1, out);
      same_length_sequences(hi & ~m, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  encode_utf8(lo, a);
  encode_utf8(hi, b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (size_t i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

}  // namespace

void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  if (hi > 0x10FFFF) hi = 0x10FFFF;
  // Pieces that do not cross an encoded-length boundary or the surrogate block.
  const uint32_t bounds[][2] = {{0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  for (const auto& b : bounds) {
    const uint32_t l = std::max(lo, b[0]), h = std::min(hi, b[1]);
    if (l <= h && lo <= hi) same_length_sequences(l, h, out);
  }
}

uint32_t GrammarBuilder::rule(std::string_view name) {
  auto it = names_.find(std::string(name));
  if (it != names_.end()) return it->second;
  rules_.push_back(PendingRule{std::string(name), false, {}});
  names_.emplace(std::string(name), static_cast<uint32_t>(rules_.size() - 1));
  return static_cast<uint32_t>(rules_.size() - 1);
}

uint32_t GrammarBuilder::helper_rule(std::string_view base) {
  // Helper names hold a character GBNF names cannot, so they never clash with the user's.
  std::string name(base);
  name += "~" + std::to_string(++helpers_);
  rules_.push_back(PendingRule{name, false, {}});
  return static_cast<uint32_t>(rules_.size() - 1);
}

bool GrammarBuilder::define(uint32_t r, std::vector<Sequence> alternatives) {
  if (rules_[r].defined) return false;
  for (const Sequence& s : alternatives) total_elements_ += s.size() + 1;
  rules_[r].defined = true;
  rules_[r].alternatives = std::move(alternatives);
  return true;
}

GrammarElement GrammarBuilder::bytes(const ByteSet& set) {
  // Literals repeat the same few sets; sharing them keeps the table small.
  const std::array<uint64_t, 4> key{set.bits[0], set.bits[1], set.bits[2], set.bits[3]};
  auto it = set_index_.find(key);
  if (it != set_index_.end()) return GrammarElement{GrammarElement::kBytes, it->second};
  set_index_.emplace(key, static_cast<uint32_t>(byte_sets_.size()));
  byte_sets_.push_back(set);
  return GrammarElement{GrammarElement::kBytes, static_cast<uint32_t>(byte_sets_.size() - 1)};
}

void GrammarBuilder::add_code_point(uint32_t cp, Sequence* seq) {
  uint8_t buf[4];
  const size_t n = encode_utf8(cp, buf);
  for (size_t i = 0; i < n; ++i) {
    ByteSet s;
    s.add(buf[i]);
    seq->push_back(bytes(s));
  }
}

void GrammarBuilder::add_char_class(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated,
                                    std::string_view base, Sequence* seq) {
  // Normalize: sorted, merged, clipped to the code space.
  for (auto& r : ranges) {
    if (r.first > r.second) std::swap(r.first, r.second);
    r.second = std::min<uint32_t>(r.second, 0x10FFFF);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (r.first > 0x10FFFF) continue;
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<std::pair<uint32_t, uint32_t>> complement;
    uint32_t next = 0;
    for (const auto& r : merged) {
      if (r.first > next) complement.emplace_back(next, r.first - 1);
      next = r.second + 1;
    }
    if (next <= 0x10FFFF) complement.emplace_back(next, 0x10FFFF);
    merged = std::move(complement);
  }
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> sequences;
  for (const auto& r : merged) utf8_sequences(r.first, r.second, &sequences);
  ByteSet single;
  bool any_single = false;
  std::vector<Sequence> multi;
  for (const auto& s : sequences) {
    if (s.size() == 1) {
      single.add_range(s[0].first, s[0].second);
      any_single = true;
      continue;
    }
    Sequence alt;
    for (const auto& br : s) {
      ByteSet b;
      b.add_range(br.first, br.second);
      alt.push_back(bytes(b));
    }
    multi.push_back(std::move(alt));
  }
  if (multi.empty()) {
    // An empty set (e.g. [^\x00-\U0010FFFF]) matches nothing: a byte set with no bits.
    seq->push_back(bytes(single));
    return;
  }
  std::vector<Sequence> alternatives;
  if (any_single) alternatives.push_back(Sequence{bytes(single)});
  for (Sequence& m : multi) alternatives.push_back(std::move(m));
  const uint32_t r = helper_rule(base);
  define(r, std::move(alternatives));
  seq->push_back(ref(r));
}

bool GrammarBuilder::finish(std::string_view root, Grammar* out, std::string* error) {
  uint32_t root_rule = 0;
  bool found_root = false;
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == root) root_rule = static_cast<uint32_t>(i), found_root = rules_[i].defined;
  }
  if (!found_root) {
    *error = "the grammar has no rule '" + std::string(root) + "' (the start rule)";
    return false;
  }
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (!rules_[i].defined) {
      *error = "rule '" + rules_[i].name + "' is used but never defined";
      return false;
    }
  }
  // Which rules can match the empty string (to a fixed point).
  const size_t n = rules_.size();
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules_[r].alternatives) {
        bool all = true;
        for (const GrammarElement& e : alt) all = all && e.kind == GrammarElement::kRule && nullable[e.arg];
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  // Left edges: A -> B when B can start A (only nullable elements before it). A cycle would make the matcher
  // expand rules forever without reading a byte.
  std::vector<std::vector<uint32_t>> left(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Sequence& alt : rules_[r].alternatives) {
      for (const GrammarElement& e : alt) {
        if (e.kind != GrammarElement::kRule) break;
        left[r].push_back(e.arg);
        if (!nullable[e.arg]) break;
      }
    }
  }
  // Iterative DFS (hostile grammars may chain many rules) with colours: 1 on the path, 2 done.
  std::vector<char> colour(n, 0);
  std::vector<uint32_t> parent(n, UINT32_MAX);
  for (size_t start = 0; start < n; ++start) {
    if (colour[start]) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{static_cast<uint32_t>(start), 0}};
    colour[start] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == left[r].size()) {
        colour[r] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t b = left[r][next++];
      if (colour[b] == 1) {
        std::string path = rules_[b].name;
        // The cycle: b ... r -> b, from the DFS path.
        size_t k = 0;
        while (stack[k].first != b) ++k;
        for (size_t j = k + 1; j < stack.size(); ++j) path += " -> " + rules_[stack[j].first].name;
        path += " -> " + rules_[b].name;
        *error = "rule '" + rules_[b].name + "' is left-recursive (" + path +
                 " with nothing consumed); rewrite it right-recursive or with repetition";
        return false;
      }
      if (colour[b] == 0) {
        colour[b] = 1;
        stack.emplace_back(b, 0);
      }
    }
  }
  // Flatten.
  Grammar g;
  g.byte_sets = byte_sets_;
  g.root = root_rule;
  g.rules.resize(n);
  for (size_t r = 0; r < n; ++r) {
    g.rules[r].name = rules_[r].name;
    for (const Sequence& alt : rules_[r].alternatives) {
      g.rules[r].alternatives.push_back(static_cast<uint32_t>(g.elements.size()));
      g.elements.insert(g.elements.end(), alt.begin(), alt.end());
      g.elements.push_back(GrammarElement{GrammarElement::kEnd, static_cast<uint32_t>(r)});
    }
  }
  *out = std::move(g);
  return true;
}

namespace {

void append_byte(std::string* s, unsigned b) {
  char buf[8];
  if (b >= 0x20 && b < 0x7F && b != '\\' && b != ']' && b != '[' && b != '-' && b != '^' && b != '"') {
    *s += static_cast<char>(b);
  } else {
    snprintf(buf, sizeof(buf), "\\x%02X", b);
    *s += buf;
  }
}

}  // namespace

std::string Grammar::to_gbnf() const {
  std::string s;
  for (const Rule& r : rules) {
    s += r.name + " ::=";
    for (size_t a = 0; a < r.alternatives.size(); ++a) {
      if (a > 0) s += " |";
      size_t p = r.alternatives[a];
      if (elements[p].kind == GrammarElement::kEnd) s += " \"\"";
      for (; elements[p].kind != GrammarElement::kEnd; ++p) {
        const GrammarElement& e = elements[p];
        s += ' ';
        if (e.kind == GrammarElement::kRule) {
          s += rules[e.arg].name;
          continue;
        }
        s += '[';
        const ByteSet& set = byte_sets[e.arg];
        for (unsigned b = 0; b < 256;) {
          if (!set.has(static_cast<uint8_t>(b))) {
            ++b;
            continue;
          }
          unsigned h = b;
          while (h + 1 < 256 && set.has(static_cast<uint8_t>(h + 1))) ++h;
          append_byte(&s, b);
          if (h > b) {
            s += '-';
            append_byte(&s, h);
          }
          b = h + 1;
        }
        s += ']';
      }
    }
    s += '\n';
  }
  return s;
}

}  // namespace llm
}  // namespace ember
