// The platform abstraction layer (PAL): the few things the runtime needs from its host. Each target links one
// implementation (posix.cc on Linux/Android/iOS, minimal.cc or a board's own on bare metal); the runtime core
// depends only on this header.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  EMBER_LOG_DEBUG = 0,
  EMBER_LOG_INFO = 1,
  EMBER_LOG_ERROR = 2,
} ember_log_level_t;

// Called once by the application before anything else (not by library code).
void ember_pal_init(void);

// One formatted log line, without a trailing newline. `message` is not NUL-terminated beyond `length`.
void ember_pal_log(ember_log_level_t level, const char* file, int line, const char* message, size_t length);

// Monotonic time in nanoseconds, for timing and profiling; a platform without a clock returns 0.
uint64_t ember_pal_ticks_ns(void);

// Ends the program. Only applications call it: library code reports errors as values.
void ember_pal_abort(void);

#ifdef __cplusplus
}
#endif
