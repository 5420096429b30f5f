// The PAL of Ember's C API shared library: error lines go to the calling thread's last-error message
// (status.h), and to stderr when EMBER_LOG=1. A static user of the C API links it, or their own PAL (then the
// messages carry the C API's context without the runtime's line).
#include <stdio.h>
#include <stdlib.h>

#include <chrono>

#include "runtime/c_api/status.h"
#include "runtime/platform/platform.h"

extern "C" {
void ember_pal_init(void) {}
void ember_pal_log(ember_log_level_t level, const char*, int, const char* message, size_t length) {
  if (level == EMBER_LOG_ERROR) ember::c_api::note_runtime_error(message, length);
  const char* env = getenv("EMBER_LOG");
  if (env != nullptr && env[0] == '1') fprintf(stderr, "ember: %.*s\n", static_cast<int>(length), message);
}
uint64_t ember_pal_ticks_ns(void) {
  // The C++ library's monotonic clock: one spelling for every hosted target, Windows' C runtime included.
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
void ember_pal_abort(void) { abort(); }
}
