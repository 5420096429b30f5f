// The runtime's PAL on the bare-metal boards: log lines go to the host console through semihosting, time comes
// from SysTick, and abort ends the emulation with a status rather than spinning.
#include <stdio.h>

#include "platforms/bare_metal/semihosting.h"
#include "platforms/bare_metal/startup.h"
#include "runtime/platform/platform.h"

extern "C" {

void ember_pal_init(void) {}

void ember_pal_log(ember_log_level_t level, const char* file, int line, const char* message, size_t length) {
  static const char kLevel[] = {'D', 'I', 'E'};
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  char prefix[64];
  const int n = snprintf(prefix, sizeof(prefix), "%c ember %s:%d] ",
                         kLevel[level <= EMBER_LOG_ERROR ? level : EMBER_LOG_ERROR], base, line);
  if (n > 0) ember::semihosting::write_stdout(prefix, static_cast<size_t>(n) < sizeof(prefix) ? n : sizeof(prefix) - 1);
  ember::semihosting::write_stdout(message, length);
  ember::semihosting::write_stdout("\n", 1);
}

uint64_t ember_pal_ticks_ns(void) { return ember::board::now_ns(); }

void ember_pal_abort(void) {
  ember::semihosting::print("abort: the application stopped the program\n");
  ember::semihosting::exit(134);
}

}  // extern "C"
