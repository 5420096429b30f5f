// What templates call by name: filters (`x | trim`), tests (`x is defined`), global functions (range, namespace,
// dict, raise_exception, strftime_now) and the methods of strings and dicts (`s.strip()`, `d.items()`), each as
// Jinja on Python computes it for the values chat templates see.
#pragma once

#include <stdint.h>

#include <string>
#include <string_view>
#include <vector>

#include "examples/llm/chat/value.h"

namespace ember {
namespace llm {
namespace chat {

struct Arguments {
  std::vector<Value> positional;
  ValueDict keywords;

  // The argument at `index`, else the keyword argument `keyword`, else nullptr.
  const Value* get(size_t index, std::string_view keyword) const;
};

// What a call may spend and how it reports failure. `steps` counts work against `max_steps` (loops and the bytes
// of strings built), so no template can run or grow without bound.
struct CallSite {
  std::string message;  // set on failure
  bool raised = false;  // the failure is the template's raise_exception()
  uint64_t* steps = nullptr;
  uint64_t max_steps = 0;
  size_t max_bytes = 0;

  bool fail(std::string m) {
    message = std::move(m);
    return false;
  }
  // Charges `n` steps; false (with the message) when the budget is spent.
  bool spend(uint64_t n);
  // Refuses a string or list of `size` bytes or items beyond the output limit.
  bool fits(size_t size);
};

bool call_filter(const std::string& name, const Value& input, const Arguments& args, CallSite* site, Value* out);
bool call_test(const std::string& name, const Value& input, const Arguments& args, CallSite* site, bool* out);
// A global function or a bound method (Value::callable).
bool call_function(const Value& callable, const Arguments& args, CallSite* site, Value* out);

// The method `name` of `self` as a bound callable, or undefined when `self` has no such method. A list's mutating
// methods are refused (the sandbox transformers renders in makes containers immutable).
bool method_of(const Value& self, const std::string& name, CallSite* site, Value* out);
// Whether `name` is a global function.
bool is_global_function(const std::string& name);

// Python's ordering for < <= > >= (numbers, strings, lists); false with a message for other pairs.
bool compare_values(const Value& a, const Value& b, const std::string& op, CallSite* site, bool* out);
// Python's `a in b`.
bool contains(const Value& container, const Value& item, CallSite* site, bool* out);
// The items a for loop (or a filter) walks over: a list's items, a dict's keys, a string's characters; undefined
// is empty.
bool iterate(const Value& v, CallSite* site, ValueList* out);

// Code point helpers for Python's string indexing.
std::vector<std::string> characters(const std::string& s);

}  // namespace chat
}  // namespace llm
}  // namespace ember
