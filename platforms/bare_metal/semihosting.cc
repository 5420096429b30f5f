#include "platforms/bare_metal/semihosting.h"

#include <string.h>

namespace ember {
namespace semihosting {
namespace {

// Operation numbers from Arm's semihosting specification (v2).
enum Op : uint32_t {
  kOpen = 0x01,
  kClose = 0x02,
  kWrite = 0x05,
  kRead = 0x06,
  kFlen = 0x0C,
  kGetCmdline = 0x15,
  kExitExtended = 0x20,  // takes an exit status on 32-bit targets too (plain SYS_EXIT cannot)
};

constexpr uint32_t kApplicationExit = 0x20026;  // ADP_Stopped_ApplicationExit

uint32_t call(uint32_t op, const void* args) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = args;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

int stdout_handle() {
  // ":tt" is the host's console; mode 4 ("w") selects its output side.
  static int handle = -1;
  if (handle < 0) {
    const uint32_t args[3] = {reinterpret_cast<uint32_t>(":tt"), 4, 3};
    handle = static_cast<int>(call(kOpen, args));
  }
  return handle;
}

}  // namespace

void write_stdout(const char* data, size_t length) { write(stdout_handle(), data, length); }

void print(const char* text) { write_stdout(text, strlen(text)); }

int open(const char* path, bool for_writing) {
  // Binary modes: 1 = "rb", 5 = "wb".
  const uint32_t args[3] = {reinterpret_cast<uint32_t>(path), for_writing ? 5u : 1u,
                            static_cast<uint32_t>(strlen(path))};
  return static_cast<int>(call(kOpen, args));
}

size_t read(int handle, void* buffer, size_t length) {
  const uint32_t args[3] = {static_cast<uint32_t>(handle), reinterpret_cast<uint32_t>(buffer), length};
  const uint32_t not_read = call(kRead, args);  // the host answers with the bytes it did NOT transfer
  return not_read <= length ? length - not_read : 0;
}

size_t write(int handle, const void* buffer, size_t length) {
  if (handle < 0) return 0;
  const uint32_t args[3] = {static_cast<uint32_t>(handle), reinterpret_cast<uint32_t>(buffer), length};
  const uint32_t not_written = call(kWrite, args);
  return not_written <= length ? length - not_written : 0;
}

long file_length(int handle) {
  const uint32_t args[1] = {static_cast<uint32_t>(handle)};
  return static_cast<long>(static_cast<int32_t>(call(kFlen, args)));
}

void close(int handle) {
  const uint32_t args[1] = {static_cast<uint32_t>(handle)};
  call(kClose, args);
}

bool command_line(char* buffer, size_t size) {
  uint32_t args[2] = {reinterpret_cast<uint32_t>(buffer), size};
  if (call(kGetCmdline, args) != 0) return false;
  return args[1] < size;  // the host wrote args[1] bytes plus a NUL
}

void exit(int status) {
  const uint32_t args[2] = {kApplicationExit, static_cast<uint32_t>(status)};
  call(kExitExtended, args);
  for (;;) __asm__ volatile("wfi");  // only without a host: nothing left to do
}

}  // namespace semihosting
}  // namespace ember
