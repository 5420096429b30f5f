// Logging through the platform layer. Messages are formatted into a small stack buffer (no heap), so a log call
// is safe anywhere, including in kernels on a microcontroller.
//
// EMBER_LOG_ENABLED=0 compiles every message out, strings included, for flash-starved targets (TFLite Micro
// strips its error strings the same way); errors are still returned as values.
#pragma once

#include "runtime/platform/platform.h"

#ifndef EMBER_LOG_ENABLED
#define EMBER_LOG_ENABLED 1
#endif

// Format checks for printf-style functions: argument fmt_arg is the format, the variadic ones start at first_arg.
// mingw's gcc reads the `printf` archetype as Microsoft's dialect (no %zu); its toolchain here builds with
// __USE_MINGW_ANSI_STDIO, whose vsnprintf is C99's, so the checks follow gnu_printf.
#if defined(__MINGW32__)
#define EMBER_PRINTF_FORMAT(fmt_arg, first_arg) __attribute__((format(gnu_printf, fmt_arg, first_arg)))
#elif defined(__GNUC__)
#define EMBER_PRINTF_FORMAT(fmt_arg, first_arg) __attribute__((format(printf, fmt_arg, first_arg)))
#else
#define EMBER_PRINTF_FORMAT(fmt_arg, first_arg)
#endif

namespace ember {
namespace internal {

EMBER_PRINTF_FORMAT(4, 5)
void log(ember_log_level_t level, const char* file, int line, const char* format, ...);

// Stands in for the log call when logging is compiled out: only named inside sizeof, so no code and no string is
// emitted, while the arguments still count as used (a value computed only for a message raises no warning).
template <typename... Args>
constexpr int discard_log_args(const Args&...) {
  return 0;
}

}  // namespace internal
}  // namespace ember

#if EMBER_LOG_ENABLED
#define EMBER_LOG(level, ...) ::ember::internal::log(EMBER_LOG_##level, __FILE__, __LINE__, __VA_ARGS__)
#else
#define EMBER_LOG(level, ...) static_cast<void>(sizeof(::ember::internal::discard_log_args(__VA_ARGS__)))
#endif
