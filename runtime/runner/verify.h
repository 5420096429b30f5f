// The runner's --verify mode (verify.cc), compiled into runner_verify only: the default runner and every
// per-model runner are built without it (EMBER_RUNNER_VERIFY unset) and do not grow.
#pragma once

namespace ember {

// Whether the command line asks for --verify.
bool wants_verify(int argc, char** argv);
// Runs every test case of the bundled program named on the command line; returns the process exit code.
int verify_main(int argc, char** argv);

}  // namespace ember
