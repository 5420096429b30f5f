#include "examples/llm/chat/lexer.h"

#include <stdlib.h>

#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace chat {

std::string normalize_template_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(const std::string& s, std::vector<Token>* out, TemplateError* error) : s_(s), out_(out), error_(error) {}

  bool run() {
    size_t pos = 0;
    while (pos < s_.size()) {
      const size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_text(pos, s_.size());
        break;
      }
      const char kind = s_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < s_.size() ? s_[tag + 2] : '\0';
      size_t text_end = tag;
      if (sign == '-') {
        while (text_end > pos && is_space(s_[text_end - 1])) --text_end;
      } else if (sign != '+' && kind != '{') {
        text_end = lstrip_end(pos, tag);
      }
      emit_text(pos, text_end);
      const size_t body = tag + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      if (kind == '#') {
        if (!skip_comment(tag, body, &pos)) return false;
      } else if (!lex_tag(kind, tag, body, &pos)) {
        return false;
      }
    }
    push(Token::Kind::kEnd, "", s_.size());
    return true;
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string::npos; i = s_.find('{', i + 1)) {
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // lstrip_blocks: a block or comment tag preceded on its line by spaces and tabs only takes them, when that line
  // starts inside this text (after a newline in it, or at the start of the template, or right after a tag end
  // that took the newline).
  size_t lstrip_end(size_t text_start, size_t tag) const {
    size_t line_start = tag;
    while (line_start > text_start && s_[line_start - 1] != '\n') --line_start;
    const bool at_line_start = line_start > text_start || text_start == 0 || s_[text_start - 1] == '\n';
    if (!at_line_start) return tag;
    for (size_t i = line_start; i < tag; ++i) {
      if (!is_space(s_[i])) return tag;
    }
    return line_start;
  }

  // Tokens come in order, so the line count continues from the previous token's place.
  Location locate(size_t offset) {
    if (offset < located_) located_ = 0, location_ = Location{1, 1};
    for (; located_ < offset && located_ < s_.size(); ++located_) {
      if (s_[located_] == '\n') {
        ++location_.line, location_.column = 1;
      } else {
        ++location_.column;
      }
    }
    return location_;
  }

  bool fail(size_t offset, std::string message) {
    error_->message = std::move(message);
    error_->where = locate(offset);
    return false;
  }

  void push(Token::Kind kind, std::string text, size_t offset) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.where = locate(offset);
    out_->push_back(std::move(t));
  }

  void emit_text(size_t begin, size_t end) {
    if (end > begin) push(Token::Kind::kText, s_.substr(begin, end - begin), begin);
  }

  // After a block or comment end: `-` takes all the white space that follows, plain ends take one newline
  // (trim_blocks), `+` ends take nothing.
  size_t after_end(size_t end, char sign, bool trims) const {
    if (sign == '-') {
      while (end < s_.size() && is_space(s_[end])) ++end;
    } else if (sign != '+' && trims && end < s_.size() && s_[end] == '\n') {
      ++end;
    }
    return end;
  }

  bool skip_comment(size_t tag, size_t body, size_t* pos) {
    const size_t close = s_.find("#}", body);
    if (close == std::string::npos) return fail(tag, "missing end of comment tag '#}'");
    const char sign = close > body && (s_[close - 1] == '-' || s_[close - 1] == '+') ? s_[close - 1] : '\0';
    *pos = after_end(close + 2, sign, true);
    return true;
  }

  bool lex_tag(char kind, size_t tag, size_t body, size_t* pos) {
    const bool block = kind == '%';
    const char close = block ? '%' : '}';
    push(block ? Token::Kind::kBlockBegin : Token::Kind::kVariableBegin, "", tag);
    std::string brackets;  // the closers owed, innermost last
    size_t i = body;
    while (true) {
      while (i < s_.size() && is_space(s_[i])) ++i;
      if (i >= s_.size()) return fail(tag, block ? "missing end of block tag '%}'" : "missing end of tag '}}'");
      if (brackets.empty()) {
        const std::string end{close, '}'};
        char sign = '\0';
        if ((s_[i] == '-' || (block && s_[i] == '+')) && s_.compare(i + 1, 2, end) == 0) sign = s_[i];
        if (sign || s_.compare(i, 2, end) == 0) {
          push(block ? Token::Kind::kBlockEnd : Token::Kind::kVariableEnd, "", i);
          *pos = after_end(i + (sign ? 3 : 2), sign, block);
          return true;
        }
      }
      if (!lex_token(&i, &brackets)) return false;
    }
  }

  bool lex_token(size_t* pos, std::string* brackets) {
    size_t i = *pos;
    const char c = s_[i];
    if (is_name_start(c)) {
      size_t j = i;
      while (j < s_.size() && is_name_char(s_[j])) ++j;
      push(Token::Kind::kName, s_.substr(i, j - i), i);
      *pos = j;
      return true;
    }
    if (is_digit(c)) return lex_number(pos);
    if (c == '\'' || c == '"') return lex_string(pos);
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(",
                                       ")",  "[",  "]",  "{",  "}",  ",",  ".", ":", "|", "=", "<", ">"};
    for (const char* op : kOps) {
      const std::string_view o(op);
      if (s_.compare(i, o.size(), o) != 0) continue;
      if (o == "(" || o == "[" || o == "{") {
        if (brackets->size() >= 64) return fail(i, "more than 64 nested brackets");
        *brackets += o == "(" ? ')' : o == "[" ? ']' : '}';
      } else if (o == ")" || o == "]" || o == "}") {
        if (brackets->empty()) return fail(i, "unexpected '" + std::string(o) + "'");
        if (brackets->back() != o[0]) {
          return fail(i, "unexpected '" + std::string(o) + "', expected '" + std::string(1, brackets->back()) + "'");
        }
        brackets->pop_back();
      }
      push(Token::Kind::kOp, std::string(o), i);
      *pos = i + o.size();
      return true;
    }
    return fail(i, "unexpected character '" + std::string(1, c) + "'");
  }

  bool lex_number(size_t* pos) {
    size_t i = *pos, j = i;
    std::string digits;
    auto take_digits = [&]() {
      while (j < s_.size() && (is_digit(s_[j]) || (s_[j] == '_' && j + 1 < s_.size() && is_digit(s_[j + 1])))) {
        if (s_[j] != '_') digits += s_[j];
        ++j;
      }
    };
    take_digits();
    bool is_float = false;
    if (j + 1 < s_.size() && s_[j] == '.' && is_digit(s_[j + 1])) {
      is_float = true;
      digits += s_[j++];
      take_digits();
    }
    if (j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
      size_t k = j + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (k < s_.size() && is_digit(s_[k])) {
        is_float = true;
        digits += 'e';
        digits.append(s_, j + 1, k - j - 1);
        j = k;
        take_digits();
      }
    }
    Token t;
    t.where = locate(i);
    t.text = s_.substr(i, j - i);
    if (is_float) {
      t.kind = Token::Kind::kFloat;
      t.number = strtod(digits.c_str(), nullptr);
    } else {
      if (digits.size() > 18) return fail(i, "integer literal out of range");
      t.kind = Token::Kind::kInt;
      t.integer = strtoll(digits.c_str(), nullptr, 10);
    }
    out_->push_back(std::move(t));
    *pos = j;
    return true;
  }

  // A quoted literal, its escapes decoded as Python's unicode-escape does (\n \t \r \\ \' \" \a \b \f \v, octal,
  // \xhh, \uhhhh, \Uhhhhhhhh, a backslash before a newline joins lines; any other backslash stays).
  bool lex_string(size_t* pos) {
    const size_t start = *pos;
    const char quote = s_[start];
    std::string value;
    size_t i = start + 1;
    while (true) {
      if (i >= s_.size()) return fail(start, "unterminated string literal");
      const char c = s_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) return fail(start, "unterminated string literal");
      const char e = s_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = i + k < s_.size() ? s_[i + k] : '\0';
            const int d = is_digit(h)              ? h - '0'
                          : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                   : -1;
            if (d < 0) return fail(i - 2, std::string("truncated \\") + e + " escape");
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(i - 2, "escape is not a Unicode scalar value");
          append_utf8(&value, cp);
          i += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < s_.size() && s_[i] >= '0' && s_[i] <= '7'; ++k) cp = cp * 8 + (s_[i++] - '0');
            append_utf8(&value, cp);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    Token t;
    t.kind = Token::Kind::kString;
    t.text = std::move(value);
    t.where = locate(start);
    out_->push_back(std::move(t));
    *pos = i + 1;
    return true;
  }

  const std::string& s_;
  std::vector<Token>* out_;
  TemplateError* error_;
  size_t located_ = 0;
  Location location_{1, 1};
};

}  // namespace

bool tokenize(const std::string& source, std::vector<Token>* tokens, TemplateError* error) {
  tokens->clear();
  return Lexer(source, tokens, error).run();
}

}  // namespace chat
}  // namespace llm
}  // namespace ember
