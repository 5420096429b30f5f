// The PAL of Ember's Python extensions (pal_recording.cc): the runtime's last error line, kept so the exception an
// extension raises carries the runtime's own message (the index, operator or byte count at fault). The extension
// clears it after reading it.
#pragma once

namespace ember {
namespace python {
extern char g_last_error[512];
}  // namespace python
}  // namespace ember
