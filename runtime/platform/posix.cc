// PAL for POSIX hosts: logs to stderr, CLOCK_MONOTONIC for time.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/platform/platform.h"

extern "C" {

void ember_pal_init(void) {}

void ember_pal_log(ember_log_level_t level, const char* file, int line, const char* message, size_t length) {
  static const char kLevel[] = {'D', 'I', 'E'};
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  fprintf(stderr, "%c ember %s:%d] %.*s\n", kLevel[level <= EMBER_LOG_ERROR ? level : EMBER_LOG_ERROR], base, line,
          static_cast<int>(length), message);
}

uint64_t ember_pal_ticks_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void ember_pal_abort(void) { abort(); }

}  // extern "C"
