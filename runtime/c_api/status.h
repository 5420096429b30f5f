// The C API's error reporting: each thread keeps the message of its last failed call, and the runtime's own
// error line (captured by the C API's PAL, pal_c_api.cc) is folded into it, so the caller reads which operator,
// value or byte count was at fault, not only a status number.
#pragma once

#include <stddef.h>

#include "runtime/c_api/include/ember/ember.h"
#include "runtime/core/error.h"
#include "runtime/core/log.h"

namespace ember {
namespace c_api {

// Called at the start of each API call: a runtime line logged before it belongs to an earlier call.
void begin_call();
// Records `status` with a message formatted from `format`, followed by the runtime's error line if one was logged
// during this call; returns `status`.
ember_status fail(ember_status status, const char* format, ...) EMBER_PRINTF_FORMAT(2, 3);
// The same for a runtime Error: the message ends with the error's name and the runtime's line.
ember_status fail_error(Error error, const char* format, ...) EMBER_PRINTF_FORMAT(2, 3);
// What the PAL calls with each runtime error line (not NUL-terminated beyond `length`). Visible across shared
// objects (the library is compiled with hidden visibility), as the PAL may live in another one; libember.so's
// version script keeps it local.
__attribute__((visibility("default"))) void note_runtime_error(const char* message, size_t length);

}  // namespace c_api
}  // namespace ember
