// PAL for Windows (mingw-w64 builds; --config=windows_x86_64): logs to stderr, QueryPerformanceCounter for time.
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "runtime/platform/platform.h"

extern "C" {

namespace {

// The counter's rate is fixed at boot: read it once.
uint64_t counter_frequency() {
  static const uint64_t frequency = [] {
    LARGE_INTEGER f;
    QueryPerformanceFrequency(&f);
    return static_cast<uint64_t>(f.QuadPart);
  }();
  return frequency;
}

}  // namespace

void ember_pal_init(void) { (void)counter_frequency(); }

void ember_pal_log(ember_log_level_t level, const char* file, int line, const char* message, size_t length) {
  static const char kLevel[] = {'D', 'I', 'E'};
  // Both separators: __FILE__ carries '/' from Bazel, '\\' from a Windows build tree.
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/' || *p == '\\') base = p + 1;
  }
  fprintf(stderr, "%c ember %s:%d] %.*s\n", kLevel[level <= EMBER_LOG_ERROR ? level : EMBER_LOG_ERROR], base, line,
          static_cast<int>(length), message);
}

uint64_t ember_pal_ticks_ns(void) {
  LARGE_INTEGER now;
  QueryPerformanceCounter(&now);
  const uint64_t ticks = static_cast<uint64_t>(now.QuadPart), frequency = counter_frequency();
  // Whole seconds and the remainder apart: ticks * 1e9 would overflow after a few hours at a 10 MHz rate.
  return ticks / frequency * 1000000000ull + ticks % frequency * 1000000000ull / frequency;
}

void ember_pal_abort(void) { abort(); }

}  // extern "C"
