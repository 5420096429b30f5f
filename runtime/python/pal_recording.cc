// PAL for the Python extension: keeps the last error line so the exception raised in Python carries the
// runtime's own message (with the index, operator or byte count at fault), and prints when EMBER_LOG=1.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/platform/platform.h"
#include "runtime/python/pal_recording.h"

namespace ember {
namespace python {
thread_local char g_last_error[512];
}  // namespace python
}  // namespace ember

extern "C" {
void ember_pal_init(void) {}
void ember_pal_log(ember_log_level_t level, const char*, int, const char* message, size_t length) {
  if (level == EMBER_LOG_ERROR) {
    const size_t n =
        length < sizeof(ember::python::g_last_error) - 1 ? length : sizeof(ember::python::g_last_error) - 1;
    memcpy(ember::python::g_last_error, message, n);
    ember::python::g_last_error[n] = '\0';
  }
  const char* env = getenv("EMBER_LOG");
  if (env != nullptr && env[0] == '1') fprintf(stderr, "ember: %.*s\n", static_cast<int>(length), message);
}
uint64_t ember_pal_ticks_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
void ember_pal_abort(void) { abort(); }
}
