// The board runner's --verify mode (verify.cc), compiled in only when the firmware embeds a bundled program
// (ember_firmware(verify = True) defines EMBER_RUNNER_VERIFY): other firmware does not grow.
#pragma once

#include "runtime/executor/method.h"

namespace ember {

// Runs every case of the embedded bundle for `method` (loaded by the runner); prints through `out`; returns the
// exit code.
int board_verify(Method& method, void (*out)(const char*, ...));

}  // namespace ember
