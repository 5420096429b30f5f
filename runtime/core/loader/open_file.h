// Opening a program file read-only, shared by the file and mmap loaders: one place that reports a missing or
// unreadable file with its path and the system's reason.
#pragma once

#include <stdint.h>

#include "runtime/core/result.h"

namespace ember {
namespace internal {

struct OpenFile {
  int fd;
  uint64_t size;
};

Result<OpenFile> open_readonly(const char* path);

}  // namespace internal
}  // namespace ember
