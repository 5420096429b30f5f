#include "examples/llm/tokenizer/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "examples/llm/tokenizer/refusal.h"
#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

const char* JsonValue::kind_name() const {
  switch (kind_) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "bool";
    case Kind::kNumber: return "number";
    case Kind::kString: return "string";
    case Kind::kArray: return "array";
    case Kind::kObject: return "object";
  }
  return "?";
}

class JsonParser {
 public:
  JsonParser(std::string_view text, std::string* error) : s_(text), error_(error) {}

  Error parse_document(JsonValue* out) {
    EMBER_TRY(parse_value(out, 0));
    skip_space();
    if (pos_ != s_.size()) return fail("end of document");
    return Error::Ok;
  }

 private:
  // Says "JSON: expected <what> at byte B (line L, column C)" (the column counts bytes) and returns
  // InvalidArgument: into the caller's string when it gave one (a server answers the client with it), to the log
  // otherwise.
  Error fail(const char* what) { return refuse_here("expected ", what); }

  Error refuse_here(const char* prefix, const char* what) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line, column = 1;
      } else {
        ++column;
      }
    }
    return refuse(error_, Error::InvalidArgument, "JSON: %s%s at byte %zu (line %zu, column %zu%s)", prefix, what, pos_,
                  line, column, pos_ >= s_.size() ? "; the document ends there" : "");
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool consume(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Error parse_value(JsonValue* out, int depth) {
    skip_space();
    if (pos_ >= s_.size()) return fail("a value");
    const char c = s_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth) {
        return refuse_here("", "more than 128 nested arrays and objects (the limit, kMaxJsonDepth)");
      }
      return c == '{' ? parse_object(out, depth + 1) : parse_array(out, depth + 1);
    }
    if (c == '"') {
      out->kind_ = JsonValue::Kind::kString;
      return parse_string(&out->string_);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
    if (consume("true")) {
      out->kind_ = JsonValue::Kind::kBool, out->bool_ = true;
      return Error::Ok;
    }
    if (consume("false")) {
      out->kind_ = JsonValue::Kind::kBool, out->bool_ = false;
      return Error::Ok;
    }
    if (consume("null")) {
      out->kind_ = JsonValue::Kind::kNull;
      return Error::Ok;
    }
    return fail("a value");
  }

  Error parse_object(JsonValue* out, int depth) {
    out->kind_ = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return Error::Ok;
    }
    while (true) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("a string key");
      std::string key;
      EMBER_TRY(parse_string(&key));
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("':'");
      ++pos_;
      out->members_.emplace_back(std::move(key), JsonValue());
      EMBER_TRY(parse_value(&out->members_.back().second, depth));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return Error::Ok;
      }
      return fail("',' or '}'");
    }
  }

  Error parse_array(JsonValue* out, int depth) {
    out->kind_ = JsonValue::Kind::kArray;
    ++pos_;  // '['
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return Error::Ok;
    }
    while (true) {
      out->items_.emplace_back();
      EMBER_TRY(parse_value(&out->items_.back(), depth));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return Error::Ok;
      }
      return fail("',' or ']'");
    }
  }

  bool hex4(uint32_t* v) {
    if (s_.size() - pos_ < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_ + i];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
        d = (c | 0x20) - 'a' + 10;
      } else {
        return false;
      }
      *v = *v * 16 + d;
    }
    pos_ += 4;
    return true;
  }

  Error parse_string(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= s_.size()) return fail("'\"' closing the string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return Error::Ok;
      }
      if (static_cast<unsigned char>(c) < 0x20) return fail("no control character inside a string");
      if (c != '\\') {
        // Copy one UTF-8 character, checked.
        size_t n;
        if (decode_utf8(s_.substr(pos_), &n) == kInvalidCodePoint) return fail("UTF-8 text");
        out->append(s_.data() + pos_, n);
        pos_ += n;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) return fail("an escape after '\\'");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!hex4(&cp)) return fail("4 hex digits after \\u");
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("a high surrogate before a low one (\\u escape)");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (!consume("\\u") || !hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
              return fail("a low surrogate \\uDC00-\\uDFFF after a high one");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: --pos_; return fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
  }

  Error parse_number(JsonValue* out) {
    const size_t start = pos_;
    bool integral = true;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("a digit");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("a digit after '.'");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("a digit in the exponent");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    const std::string token(s_.substr(start, pos_ - start));
    out->kind_ = JsonValue::Kind::kNumber;
    out->number_ = strtod(token.c_str(), nullptr);
    if (integral && token.size() <= 18) {
      out->integral_ = true;
      out->integer_ = strtoll(token.c_str(), nullptr, 10);
    } else if (isfinite(out->number_) && out->number_ == floor(out->number_) && fabs(out->number_) < 9.0e18) {
      out->integral_ = true;
      out->integer_ = static_cast<int64_t>(out->number_);
    }
    return Error::Ok;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string* error_;
};

Result<JsonValue> parse_json(std::string_view text, std::string* error) {
  JsonValue value;
  JsonParser parser(text, error);
  EMBER_TRY(parser.parse_document(&value));
  return value;
}

}  // namespace llm
}  // namespace ember
