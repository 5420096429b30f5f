// PAL for fuzz targets and their corpus replays: the runtime's error messages are formatted as always (so the
// formatting of hostile numbers is exercised too) and then dropped, since a fuzzer making a million refused
// programs a minute would spend its time writing them. EMBER_FUZZ_LOG=1 prints them, to see why an input is
// refused.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/platform/platform.h"

namespace {
int g_print = -1;  // unknown until the first message
}

extern "C" {

void ember_pal_init(void) {}

void ember_pal_log(ember_log_level_t level, const char* file, int line, const char* message, size_t length) {
  if (g_print < 0) {
    const char* v = getenv("EMBER_FUZZ_LOG");
    g_print = v != nullptr && v[0] == '1';
  }
  if (g_print) {
    fprintf(stderr, "%c %s:%d] %.*s\n", "DIE"[level <= EMBER_LOG_ERROR ? level : EMBER_LOG_ERROR], file, line,
            static_cast<int>(length), message);
  }
}

uint64_t ember_pal_ticks_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void ember_pal_abort(void) { abort(); }

}  // extern "C"
