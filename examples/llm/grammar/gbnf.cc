#include "examples/llm/grammar/gbnf.h"

#include <stdint.h>

#include <utility>
#include <vector>

namespace ember {
namespace llm {
namespace {

using Sequence = GrammarBuilder::Sequence;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, std::string* error) : s_(text), error_(error) {}

  bool parse(std::string_view root, Grammar* out) {
    skip_space();
    if (pos_ == s_.size()) return fail("the grammar is empty: expected a rule 'name ::= ...'");
    while (pos_ < s_.size()) {
      if (!parse_rule()) return false;
      skip_space();
    }
    std::string why;
    if (!b_.finish(root, out, &why)) {
      // Undefined rules are reported with where they were first used.
      for (const Use& use : uses_) {
        if (!b_.defined(use.rule)) {
          pos_ = use.at;
          rule_ = b_.name(use.in);
          return fail("rule '" + b_.name(use.rule) + "' is used but never defined");
        }
      }
      *error_ = why;
      return false;
    }
    return true;
  }

 private:
  bool fail(const std::string& what) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    // Where: line and column for a person, the byte offset for a tool, and the rule being read.
    *error_ = "line " + std::to_string(line) + ", column " + std::to_string(column) + " (byte " +
              std::to_string(pos_ < s_.size() ? pos_ : s_.size()) + ")";
    if (!rule_.empty()) *error_ += ", rule '" + rule_ + "'";
    *error_ += ": " + what;
    return false;
  }

  bool too_large() {
    return fail("the grammar is too large: more than " + std::to_string(kMaxGbnfElements) +
                " elements once repetitions are expanded (kMaxGbnfElements)");
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // At `name ::=`? (Does not move.)
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < s_.size() && is_name_char(s_[p])) ++p;
    if (p == pos_) return false;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) ++p;
    return s_.substr(p, 3) == "::=";
  }

  bool parse_name(std::string* name) {
    const size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) return fail("expected a rule name");
    *name = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  bool parse_rule() {
    std::string name;
    const size_t at = pos_;
    if (!parse_name(&name)) return false;
    rule_ = name;
    skip_space();
    if (s_.substr(pos_, 3) != "::=") return fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    const uint32_t r = b_.rule(name);
    if (b_.defined(r)) {
      pos_ = at;
      return fail("rule '" + name + "' is defined twice");
    }
    std::vector<Sequence> alts;
    if (!parse_alternatives(name, 0, &alts)) return false;
    if (pos_ < s_.size() && s_[pos_] == ')') return fail("unexpected character ')'");
    b_.define(r, std::move(alts));
    if (b_.size() > kMaxGbnfElements) return too_large();
    return true;
  }

  bool parse_alternatives(const std::string& rule_name, int depth, std::vector<Sequence>* alts) {
    for (;;) {
      Sequence seq;
      if (!parse_sequence(rule_name, depth, &seq)) return false;
      alts->push_back(std::move(seq));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return true;
    }
  }

  bool parse_sequence(const std::string& rule_name, int depth, Sequence* seq) {
    for (;;) {
      skip_space();
      if (pos_ == s_.size() || s_[pos_] == '|' || s_[pos_] == ')') return true;
      if (depth == 0 && at_rule_start()) return true;
      Sequence item;
      if (!parse_item(rule_name, depth, &item)) return false;
      if (!parse_repetition(rule_name, std::move(item), seq)) return false;
      if (b_.size() + seq->size() > kMaxGbnfElements) return too_large();
    }
  }

  bool parse_item(const std::string& rule_name, int depth, Sequence* item) {
    const char c = s_[pos_];
    if (c == '"') return parse_literal(item);
    if (c == '[') return parse_class(rule_name, item);
    if (c == '.') {
      ++pos_;
      b_.add_char_class({}, true, rule_name, item);
      return true;
    }
    if (c == '(') {
      if (depth + 1 > kMaxGbnfNesting)
        return fail("groups nest more than " + std::to_string(kMaxGbnfNesting) + " deep (kMaxGbnfNesting)");
      ++pos_;
      std::vector<Sequence> alts;
      if (!parse_alternatives(rule_name, depth + 1, &alts)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ')') return fail("expected ')' to close the group");
      ++pos_;
      if (alts.size() == 1) {
        *item = std::move(alts[0]);
      } else {
        const uint32_t g = b_.helper_rule(rule_name);
        b_.define(g, std::move(alts));
        item->push_back(GrammarBuilder::ref(g));
      }
      return true;
    }
    if (is_name_char(c)) {
      std::string name;
      const size_t at = pos_;
      if (!parse_name(&name)) return false;
      const uint32_t r = b_.rule(name);
      uses_.push_back(Use{r, at, b_.rule(rule_name)});
      item->push_back(GrammarBuilder::ref(r));
      return true;
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  // One escape after the backslash; the code point it stands for.
  bool parse_escape(uint32_t* cp) {
    if (pos_ >= s_.size()) return fail("the text ends inside an escape");
    const char c = s_[pos_++];
    int digits = 0;
    switch (c) {
      case 'n': *cp = '\n'; return true;
      case 'r': *cp = '\r'; return true;
      case 't': *cp = '\t'; return true;
      case '0': *cp = 0; return true;
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '\'':
      case '/': *cp = static_cast<unsigned char>(c); return true;
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default: pos_ -= 2; return fail(std::string("unknown escape '\\") + c + "'");
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= s_.size()) return fail("the text ends inside a \\" + std::string(1, c) + " escape");
      const char h = s_[pos_];
      uint32_t d;
      if (h >= '0' && h <= '9') d = h - '0';
      else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
      else return fail("expected " + std::to_string(digits) + " hex digits after \\" + std::string(1, c));
      v = v * 16 + d;
      ++pos_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return fail("escape is not a Unicode scalar value");
    *cp = v;
    return true;
  }

  // One code point of the text (UTF-8) or an escape.
  bool parse_char(uint32_t* cp) {
    const unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c == '\\') {
      ++pos_;
      return parse_escape(cp);
    }
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + n > s_.size()) return fail("invalid UTF-8 in the grammar");
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t i = 1; i < n; ++i) {
      const unsigned char k = static_cast<unsigned char>(s_[pos_ + i]);
      if ((k >> 6) != 2) return fail("invalid UTF-8 in the grammar");
      v = (v << 6) | (k & 0x3F);
    }
    pos_ += n;
    *cp = v;
    return true;
  }

  bool parse_literal(Sequence* item) {
    ++pos_;  // "
    for (;;) {
      if (pos_ >= s_.size()) return fail("the text ends inside a string literal");
      if (s_[pos_] == '"') {
        ++pos_;
        return true;
      }
      if (s_[pos_] == '\n') return fail("a string literal must end on its line");
      uint32_t cp;
      if (!parse_char(&cp)) return false;
      b_.add_code_point(cp, item);
    }
  }

  bool parse_class(const std::string& rule_name, Sequence* item) {
    const size_t at = pos_;
    ++pos_;  // [
    bool negated = false;
    if (pos_ < s_.size() && s_[pos_] == '^') negated = true, ++pos_;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    for (;;) {
      if (pos_ >= s_.size()) {
        pos_ = at;
        return fail("character class not closed with ']'");
      }
      if (s_[pos_] == ']') {
        ++pos_;
        break;
      }
      if (s_[pos_] == '\n') {
        pos_ = at;
        return fail("character class not closed with ']'");
      }
      uint32_t lo, hi;
      if (!parse_char(&lo)) return false;
      hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']' && s_[pos_ + 1] != '\n') {
        ++pos_;
        if (!parse_char(&hi)) return false;
        if (hi < lo) return fail("range end is below its start in the character class");
      }
      ranges.emplace_back(lo, hi);
    }
    b_.add_char_class(std::move(ranges), negated, rule_name, item);
    return true;
  }

  bool parse_count(unsigned* v) {
    const size_t start = pos_;
    uint64_t x = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      x = x * 10 + static_cast<unsigned>(s_[pos_] - '0');
      if (x > kMaxGbnfRepeat)
        return fail("repetition count above " + std::to_string(kMaxGbnfRepeat) + " (kMaxGbnfRepeat)");
      ++pos_;
    }
    if (pos_ == start) return fail("expected a number in the repetition {m,n}");
    *v = static_cast<unsigned>(x);
    return true;
  }

  // The item as one element (a helper rule when it has several), for repeating.
  GrammarElement as_element(const std::string& rule_name, Sequence item) {
    if (item.size() == 1) return item[0];
    const uint32_t r = b_.helper_rule(rule_name);
    std::vector<Sequence> alts;
    alts.push_back(std::move(item));
    b_.define(r, std::move(alts));
    return GrammarBuilder::ref(r);
  }

  // Appends item, repeated as the operator after it (if any) says, to seq.
  bool parse_repetition(const std::string& rule_name, Sequence item, Sequence* seq) {
    unsigned lo = 1, hi = 1;
    bool unbounded = false;
    if (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '?') lo = 0, ++pos_;
      else if (c == '*') lo = 0, unbounded = true, ++pos_;
      else if (c == '+') unbounded = true, ++pos_;
      else if (c == '{') {
        ++pos_;
        skip_space();
        if (!parse_count(&lo)) return false;
        skip_space();
        hi = lo;
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip_space();
          if (pos_ < s_.size() && s_[pos_] == '}') {
            unbounded = true;
          } else {
            if (!parse_count(&hi)) return false;
            if (hi < lo) return fail("repetition {m,n} with n below m");
          }
          skip_space();
        }
        if (pos_ >= s_.size() || s_[pos_] != '}') return fail("expected '}' to close the repetition");
        ++pos_;
      }
    }
    if (lo == 1 && hi == 1 && !unbounded) {
      seq->insert(seq->end(), item.begin(), item.end());
      return true;
    }
    if (item.empty()) return true;  // "" repeated is ""
    const GrammarElement e = as_element(rule_name, std::move(item));
    if (static_cast<size_t>(lo) + (unbounded ? 0 : hi) + b_.size() > kMaxGbnfElements) {
      return too_large();
    }
    for (unsigned i = 0; i < lo; ++i) seq->push_back(e);
    if (unbounded) {
      // star ::= e star | ""  (right recursion: the matcher's stack does not grow with the count)
      const uint32_t star = b_.helper_rule(rule_name);
      b_.define(star, {Sequence{e, GrammarBuilder::ref(star)}, Sequence{}});
      seq->push_back(GrammarBuilder::ref(star));
      return true;
    }
    // Up to hi - lo more: opt_k ::= e opt_{k-1} | "", nested so each extra copy needs the one before it.
    uint32_t inner = UINT32_MAX;
    for (unsigned k = 0; k < hi - lo; ++k) {
      const uint32_t opt = b_.helper_rule(rule_name);
      Sequence first{e};
      if (inner != UINT32_MAX) first.push_back(GrammarBuilder::ref(inner));
      b_.define(opt, {std::move(first), Sequence{}});
      inner = opt;
    }
    if (inner != UINT32_MAX) seq->push_back(GrammarBuilder::ref(inner));
    return true;
  }

  std::string_view s_;
  std::string* error_;
  size_t pos_ = 0;
  GrammarBuilder b_;
  std::string rule_;  // the rule being read, for errors
  struct Use {
    uint32_t rule;  // the rule referred to
    size_t at;      // where
    uint32_t in;    // the rule whose body refers to it
  };
  std::vector<Use> uses_;  // for errors
};

}  // namespace

bool parse_gbnf(std::string_view text, Grammar* out, std::string* error, std::string_view root) {
  GbnfParser p(text, error);
  return p.parse(root, out);
}

}  // namespace llm
}  // namespace ember
