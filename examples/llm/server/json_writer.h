// Writes the server's JSON bodies: objects and arrays built front to back into one string. Strings are written as
// given (the caller hands over valid UTF-8: utf8_stream.h makes generated text so) with JSON's escapes for quotes,
// backslashes and control characters.
#pragma once

#include <stdint.h>

#include <string>
#include <string_view>

#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace server {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // An object member's name; the value written next belongs to it.
  JsonWriter& key(std::string_view name);
  JsonWriter& string(std::string_view value);
  JsonWriter& number(int64_t value);
  JsonWriter& number(double value);
  JsonWriter& boolean(bool value);
  JsonWriter& null();
  // A value already written as JSON (e.g. a tool call's arguments that the grammar made valid).
  JsonWriter& raw(std::string_view json);

  const std::string& str() const { return out_; }

 private:
  // A comma before every value or member but the first of its container.
  void separate();
  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

// `value` as a JSON string literal, quotes included.
std::string json_quote(std::string_view value);

// A parsed document written back as JSON text (members in their order; numbers as integers when integral).
std::string to_json(const JsonValue& value);

}  // namespace server
}  // namespace llm
}  // namespace ember
