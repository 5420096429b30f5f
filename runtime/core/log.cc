#include "runtime/core/log.h"

#include <stdarg.h>
#include <stdio.h>

namespace ember {
namespace internal {

void log(ember_log_level_t level, const char* file, int line, const char* format, ...) {
  // Long enough for any message the runtime writes; longer ones are cut, never overflowed.
  char buffer[256];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n < 0) return;
  size_t length = static_cast<size_t>(n) < sizeof(buffer) ? static_cast<size_t>(n) : sizeof(buffer) - 1;
  ember_pal_log(level, file, line, buffer, length);
}

}  // namespace internal
}  // namespace ember
