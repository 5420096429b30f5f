// The PAL of Ember's Python extensions (pal_recording.cc): the runtime's last error line, kept so the exception an
// extension raises carries the runtime's own message (the index, operator or byte count at fault). The extension
// clears it after reading it. One per thread: Python threads running methods at once each see their own error.
#pragma once

namespace ember {
namespace python {
extern thread_local char g_last_error[512];
}  // namespace python
}  // namespace ember
