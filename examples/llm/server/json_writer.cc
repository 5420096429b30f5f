#include "examples/llm/server/json_writer.h"

#include <math.h>
#include <stdio.h>

namespace ember {
namespace llm {
namespace server {

namespace {

void append_escaped(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          char escaped[8];
          snprintf(escaped, sizeof(escaped), "\\u%04x", u);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

std::string json_quote(std::string_view value) {
  std::string out;
  append_escaped(out, value);
  return out;
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_) out_ += ',';
  first_ = false;
}

namespace {

void write_value(JsonWriter& w, const JsonValue& v) {
  switch (v.kind()) {
    case JsonValue::Kind::kNull: w.null(); break;
    case JsonValue::Kind::kBool: w.boolean(v.as_bool()); break;
    case JsonValue::Kind::kNumber:
      if (v.is_integer()) {
        w.number(v.as_int());
      } else {
        w.number(v.as_double());
      }
      break;
    case JsonValue::Kind::kString: w.string(v.as_string()); break;
    case JsonValue::Kind::kArray:
      w.begin_array();
      for (const JsonValue& item : v.items()) write_value(w, item);
      w.end_array();
      break;
    case JsonValue::Kind::kObject:
      w.begin_object();
      for (const auto& m : v.members()) {
        w.key(m.first);
        write_value(w, m.second);
      }
      w.end_object();
      break;
  }
}

}  // namespace

std::string to_json(const JsonValue& value) {
  JsonWriter w;
  write_value(w, value);
  return w.str();
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  append_escaped(out_, name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view value) {
  separate();
  append_escaped(out_, value);
  return *this;
}

JsonWriter& JsonWriter::number(int64_t value) {
  separate();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::number(double value) {
  separate();
  if (!isfinite(value)) {
    out_ += "null";  // JSON has no infinities or NaN
    return *this;
  }
  char text[32];
  snprintf(text, sizeof(text), "%.17g", value);
  out_ += text;
  return *this;
}

JsonWriter& JsonWriter::boolean(bool value) {
  separate();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

}  // namespace server
}  // namespace llm
}  // namespace ember
