// PAL for targets with nothing to offer: no log sink, no clock. A board port replaces it with its own.
#include "runtime/platform/platform.h"

extern "C" {

void ember_pal_init(void) {}

void ember_pal_log(ember_log_level_t, const char*, int, const char*, size_t) {}

uint64_t ember_pal_ticks_ns(void) { return 0; }

void ember_pal_abort(void) {
  for (;;) {
  }
}

}  // extern "C"
