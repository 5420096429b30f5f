// Arm semihosting: the debugger (here QEMU with -semihosting) services a few calls for the program, so a board
// without a console or file system can still print, read its inputs, write its outputs and exit with a status.
// Every call traps with BKPT 0xAB; without a debugger attached it would halt the core, so only the runner
// application uses this, never the runtime library.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {
namespace semihosting {

// Writes `length` bytes to the host's stdout.
void write_stdout(const char* data, size_t length);
void print(const char* text);

// Host files, opened relative to the emulator's working directory. Returns -1 when the host refuses.
int open(const char* path, bool for_writing);
// Bytes actually transferred.
size_t read(int handle, void* buffer, size_t length);
size_t write(int handle, const void* buffer, size_t length);
long file_length(int handle);
void close(int handle);

// The command line the host passed (QEMU: -semihosting-config arg=...). False if none or too long.
bool command_line(char* buffer, size_t size);

// Ends the emulation with `status` as the emulator's exit code. Does not return.
[[noreturn]] void exit(int status);

}  // namespace semihosting
}  // namespace ember
