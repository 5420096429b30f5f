// Where a tokenizer loader's refusal of a user's file goes: into the caller's string when it gave one (the Python
// binding raises it, llm_runner prints it), to the log otherwise, as parse_json does. Each message names what is
// wrong and where: a byte offset, a JSON path such as model.merges[12], a protobuf field, the limit.
#pragma once

#include <string>

#include "runtime/core/log.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {

// Formats the message, sends it to `*why` or the log, and returns `code`.
Error refuse(std::string* why, Error code, const char* format, ...) EMBER_PRINTF_FORMAT(3, 4);

}  // namespace llm
}  // namespace ember

// Returns refuse(why, Error::code, ...) from the enclosing function when `cond` is false.
#define EMBER_REFUSE_UNLESS(why, cond, code, ...)                                     \
  do {                                                                                \
    if (!(cond)) return ::ember::llm::refuse(why, ::ember::Error::code, __VA_ARGS__); \
  } while (0)
