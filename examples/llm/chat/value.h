// The values a chat template computes with, as Jinja (on Python) sees them: undefined, none, booleans, integers,
// floats, strings, lists (and tuples), dicts with string keys in insertion order, namespaces (the one mutable
// kind: `set ns.x = ...`) and callables (global functions and bound methods). Lists and dicts are shared and never
// changed after they are built, so copying a value is cheap.
#pragma once

#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace chat {

class Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

  // Undefined; `name` is what was looked up, for "'name' is undefined" messages.
  Value() = default;
  static Value undefined(std::string name);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(ValueList items, bool tuple = false);
  static Value dict(ValueDict members);
  static Value make_namespace(ValueDict members);
  // A global function (`name`) or the method `name` bound to `self`.
  static Value callable(std::string name, const Value* self = nullptr);
  static Value from_json(const JsonValue& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python's numbers: bool is an int there.
  bool is_number() const { return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  // The string of a string, the undefined name of an undefined, the function name of a callable.
  const std::string& text() const { return s_; }
  const ValueList& items() const;
  // A dict's or namespace's members.
  const ValueDict& members() const;
  ValueDict& namespace_members() { return *dict_; }
  // A bound method's object (nullptr for a global function).
  const Value* self() const { return self_.get(); }

  // The member `key` of a dict or namespace, or nullptr.
  const Value* find(std::string_view key) const;

  // Python's bool(): undefined, none, 0, 0.0, "" and empty containers are false.
  bool truthy() const;
  // Python's type names, for messages: "str", "int", "list", "dict", "NoneType", "Undefined", ...
  const char* type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<Value> self_;
};

// Python's == on the values (1 == 1.0 == True; dicts compare as sets of members; undefined equals undefined).
// Nesting deeper than kMaxValueDepth compares unequal.
bool values_equal(const Value& a, const Value& b, int depth = 0);
constexpr int kMaxValueDepth = 64;

// Python's str() and repr(): what `{{ x }}` prints ("None", "True", "1.0", "['a', 'b']"); undefined prints "".
std::string to_str(const Value& v);
std::string to_repr(const Value& v, int depth = 0);
// Python's float repr: the shortest digits that read back to the same double ("0.1", "1e+16", "1.0").
std::string float_repr(double d);

// json.dumps(v, ensure_ascii=False, indent, separators, sort_keys), as transformers' tojson filter calls it. An
// indent < 0 means none. Returns false, with *error set, for values JSON cannot hold (undefined, callables).
struct JsonOptions {
  int indent = -1;
  std::string item_separator;  // empty: ", " without indent, "," with one
  std::string key_separator = ": ";
  bool has_item_separator = false;
  bool sort_keys = false;
  bool ensure_ascii = false;  // non-ASCII characters as \uXXXX escapes (surrogate pairs above U+FFFF)
};
bool to_json(const Value& v, const JsonOptions& options, std::string* out, std::string* error);

// Python's str.isspace for one code point: Unicode White_Space plus the separators U+001C..U+001F.
bool is_py_space(uint32_t cp);

}  // namespace chat
}  // namespace llm
}  // namespace ember
