// A small JSON reader (RFC 8259) for tokenizer.json: the whole document into a tree of values. Errors are values:
// a malformed document gives Error::InvalidArgument and logs what was expected, at which line and column.
#pragma once

#include <stdint.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/result.h"

namespace ember {
namespace llm {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  // An integral number that fits int64_t (written without fraction or exponent, or with an integral value).
  bool is_integer() const { return kind_ == Kind::kNumber && integral_; }

  bool as_bool() const { return bool_; }
  double as_double() const { return number_; }
  int64_t as_int() const { return integer_; }
  const std::string& as_string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  // Members in document order; a repeated key is kept twice (find returns the first).
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }

  // The member named `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;

  // "null", "bool", "number", "string", "array" or "object": for error messages.
  const char* kind_name() const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  bool integral_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses one JSON document (surrounding white space allowed, nothing else after it). Nesting is limited to
// kMaxJsonDepth arrays and objects, so hostile input cannot exhaust the stack. What was wrong goes to `*error`
// when given (e.g. a server's answer to its client), to the log otherwise.
constexpr int kMaxJsonDepth = 128;
Result<JsonValue> parse_json(std::string_view text, std::string* error = nullptr);

}  // namespace llm
}  // namespace ember
