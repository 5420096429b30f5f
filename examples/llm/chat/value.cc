#include "examples/llm/chat/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>

#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace chat {

namespace {

const ValueList kNoItems;
const ValueDict kNoMembers;

}  // namespace

Value Value::undefined(std::string name) {
  Value v;
  v.s_ = std::move(name);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}

Value Value::list(ValueList items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.tuple_ = tuple;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::dict(ValueDict members) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<ValueDict>(std::move(members));
  return v;
}

Value Value::make_namespace(ValueDict members) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.dict_ = std::make_shared<ValueDict>(std::move(members));
  return v;
}

Value Value::callable(std::string name, const Value* self) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.s_ = std::move(name);
  if (self != nullptr) v.self_ = std::make_shared<Value>(*self);
  return v;
}

Value Value::from_json(const JsonValue& json) {
  switch (json.kind()) {
    case JsonValue::Kind::kNull: return none();
    case JsonValue::Kind::kBool: return boolean(json.as_bool());
    case JsonValue::Kind::kNumber: return json.is_integer() ? integer(json.as_int()) : number(json.as_double());
    case JsonValue::Kind::kString: return string(json.as_string());
    case JsonValue::Kind::kArray: {
      ValueList items;
      items.reserve(json.items().size());
      for (const auto& item : json.items()) items.push_back(from_json(item));
      return list(std::move(items));
    }
    case JsonValue::Kind::kObject: {
      // A repeated key keeps its first position and its last value, as Python's json.loads.
      ValueDict members;
      for (const auto& m : json.members()) {
        auto it = std::find_if(members.begin(), members.end(), [&](const auto& p) { return p.first == m.first; });
        if (it != members.end()) {
          it->second = from_json(m.second);
        } else {
          members.emplace_back(m.first, from_json(m.second));
        }
      }
      return dict(std::move(members));
    }
  }
  return none();
}

const ValueList& Value::items() const { return list_ ? *list_ : kNoItems; }

const ValueDict& Value::members() const { return dict_ ? *dict_ : kNoMembers; }

const Value* Value::find(std::string_view key) const {
  if (!dict_) return nullptr;
  for (const auto& m : *dict_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !s_.empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return tuple_ ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) return false;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.text() == b.text();
    case Value::Kind::kList: {
      // Python: a list never equals a tuple.
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!values_equal(a.items()[i], b.items()[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.members().size() != b.members().size()) return false;
      for (const auto& m : a.members()) {
        const Value* other = b.find(m.first);
        if (other == nullptr || !values_equal(m.second, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace: return &a.members() == &b.members();
    case Value::Kind::kCallable: return a.text() == b.text() && a.self() == b.self();
    default: return false;
  }
}

std::string float_repr(double d) {
  if (isnan(d)) return "nan";
  if (isinf(d)) return d > 0 ? "inf" : "-inf";
  // The shortest %.*e that reads back exactly, then Python's layout: positional for exponents -4 .. 15.
  char buf[40];
  int precision = 0;
  for (; precision < 17; ++precision) {
    snprintf(buf, sizeof(buf), "%.*e", precision, d);
    if (strtod(buf, nullptr) == d) break;
  }
  std::string s(buf);
  const size_t e = s.find('e');
  const int exponent = atoi(s.c_str() + e + 1);
  std::string digits;
  const bool negative = s[0] == '-';
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (s[i] != '.') digits += s[i];
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -5 + 1 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  snprintf(buf, sizeof(buf), "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
  return out + buf;
}

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ", escapes for the quote, backslash and
// control characters; other characters as they are.
std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string to_repr(const Value& v, int depth) {
  if (depth > kMaxValueDepth) return "...";
  switch (v.kind()) {
    case Value::Kind::kString: return string_repr(v.text());
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kList: {
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ", ";
        out += to_repr(v.items()[i], depth + 1);
      }
      if (v.is_tuple() && v.items().size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      std::string out = v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& m : v.members()) {
        if (!first) out += ", ";
        first = false;
        out += string_repr(m.first) + ": " + to_repr(m.second, depth + 1);
      }
      return out + (v.is_namespace() ? "}>" : "}");
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return float_repr(v.as_double());
    case Value::Kind::kString: return v.text();
    case Value::Kind::kCallable: return "<function " + v.text() + ">";
    default: return to_repr(v);
  }
}

namespace {

void json_string(const std::string& s, bool ensure_ascii, std::string* out) {
  *out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (ensure_ascii && c >= 0x80) {
      size_t length = 0;
      uint32_t cp = decode_utf8(std::string_view(s).substr(i), &length);
      if (cp == kInvalidCodePoint) cp = 0xFFFD;
      char buf[16];
      if (cp >= 0x10000) {
        cp -= 0x10000;
        snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
      i += length - 1;
      continue;
    }
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

bool json_value(const Value& v, const JsonOptions& o, int level, std::string* out, std::string* error) {
  if (level > kMaxValueDepth) {
    *error = "tojson: more than 64 nested lists and dicts";
    return false;
  }
  const std::string item_sep = o.has_item_separator ? o.item_separator : (o.indent >= 0 ? "," : ", ");
  auto newline = [&](int lvl) {
    if (o.indent < 0) return;
    *out += '\n';
    out->append(static_cast<size_t>(o.indent) * static_cast<size_t>(lvl), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::kNone: *out += "null"; return true;
    case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return true;
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return true;
    case Value::Kind::kFloat: {
      const double d = v.as_double();
      *out += isnan(d) ? "NaN" : isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
      return true;
    }
    case Value::Kind::kString: json_string(v.text(), o.ensure_ascii, out); return true;
    case Value::Kind::kList: {
      if (v.items().empty()) {
        *out += "[]";
        return true;
      }
      *out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) *out += item_sep;
        newline(level + 1);
        if (!json_value(v.items()[i], o, level + 1, out, error)) return false;
      }
      newline(level);
      *out += ']';
      return true;
    }
    case Value::Kind::kDict: {
      if (v.members().empty()) {
        *out += "{}";
        return true;
      }
      std::vector<const std::pair<std::string, Value>*> members;
      for (const auto& m : v.members()) members.push_back(&m);
      if (o.sort_keys) {
        std::stable_sort(members.begin(), members.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i) *out += item_sep;
        newline(level + 1);
        json_string(members[i]->first, o.ensure_ascii, out);
        *out += o.key_separator;
        if (!json_value(members[i]->second, o, level + 1, out, error)) return false;
      }
      newline(level);
      *out += '}';
      return true;
    }
    default: *error = std::string("Object of type ") + v.type_name() + " is not JSON serializable"; return false;
  }
}

}  // namespace

bool to_json(const Value& v, const JsonOptions& options, std::string* out, std::string* error) {
  return json_value(v, options, 0, out, error);
}

bool is_py_space(uint32_t cp) { return (cp >= 0x1c && cp <= 0x1f) || is_whitespace(cp); }

}  // namespace chat
}  // namespace llm
}  // namespace ember
