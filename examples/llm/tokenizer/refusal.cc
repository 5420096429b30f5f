#include "examples/llm/tokenizer/refusal.h"

#include <stdarg.h>
#include <stdio.h>

namespace ember {
namespace llm {

Error refuse(std::string* why, Error code, const char* format, ...) {
  // Long enough for a path, a quoted piece cut to a few dozen bytes and a limit.
  char message[400];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  if (why != nullptr) {
    *why = message;
  } else {
    EMBER_LOG(ERROR, "%s", message);
  }
  return code;
}

}  // namespace llm
}  // namespace ember
