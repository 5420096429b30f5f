#include "runtime/c_api/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

namespace ember {
namespace c_api {
namespace {

thread_local char t_message[1024];
thread_local char t_runtime_line[512];

ember_status to_status(Error error) {
  switch (error) {
    case Error::Ok:
    case Error::Internal:
    case Error::InvalidState:
    case Error::EndOfMethod:
    case Error::AlreadyLoaded:
    case Error::NotSupported:
    case Error::NotImplemented:
    case Error::InvalidArgument:
    case Error::InvalidType:
    case Error::OperatorMissing:
    case Error::NotFound:
    case Error::MemoryAllocationFailed:
    case Error::AccessFailed:
    case Error::InvalidProgram:
    case Error::InvalidExternalData:
    case Error::OutOfResources:
    case Error::DelegateInvalidCompatibility:
    case Error::DelegateMemoryAllocationFailed:
    case Error::DelegateInvalidHandle: return static_cast<ember_status>(static_cast<uint32_t>(error));
    default:
      // Registration errors happen before any program is loaded; a C caller sees them as internal.
      return EMBER_INTERNAL;
  }
}

ember_status record(ember_status status, const char* error_name, const char* format, va_list args) {
  int n = vsnprintf(t_message, sizeof(t_message), format, args);
  size_t used =
      n < 0 ? 0 : (static_cast<size_t>(n) < sizeof(t_message) ? static_cast<size_t>(n) : sizeof(t_message) - 1);
  if (error_name != nullptr && used < sizeof(t_message)) {
    n = snprintf(t_message + used, sizeof(t_message) - used, ": %s", error_name);
    if (n > 0)
      used += static_cast<size_t>(n) < sizeof(t_message) - used ? static_cast<size_t>(n) : sizeof(t_message) - used - 1;
  }
  if (t_runtime_line[0] != '\0' && used < sizeof(t_message)) {
    snprintf(t_message + used, sizeof(t_message) - used, " (runtime: %s)", t_runtime_line);
  }
  t_runtime_line[0] = '\0';
  return status;
}

}  // namespace

void begin_call() { t_runtime_line[0] = '\0'; }

ember_status fail(ember_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  record(status, nullptr, format, args);
  va_end(args);
  return status;
}

ember_status fail_error(Error error, const char* format, ...) {
  va_list args;
  va_start(args, format);
  record(to_status(error), error_name(error), format, args);
  va_end(args);
  return to_status(error);
}

void note_runtime_error(const char* message, size_t length) {
  // Every line of the call, in order: the first is nearest the cause (a kernel's check), the later ones say where
  // it surfaced (the instruction and operator).
  size_t used = strlen(t_runtime_line);
  if (used > 0 && used + 2 < sizeof(t_runtime_line)) {
    memcpy(t_runtime_line + used, "; ", 2);
    used += 2;
  }
  const size_t room = sizeof(t_runtime_line) - 1 - used;
  const size_t n = length < room ? length : room;
  memcpy(t_runtime_line + used, message, n);
  t_runtime_line[used + n] = '\0';
}

}  // namespace c_api
}  // namespace ember

extern "C" {

EMBER_API const char* ember_last_error(void) { return ember::c_api::t_message; }
}
