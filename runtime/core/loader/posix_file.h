// The POSIX file access the file and mmap loaders share: one place that reports a missing or unreadable file
// with its path and the system's reason, and one pread loop.
#pragma once

#include <stdint.h>

#include "runtime/core/result.h"

namespace ember {
namespace internal {

struct OpenFile {
  int fd;
  uint64_t size;
};

// AccessFailed, logged with the path and strerror(errno), when the file cannot be opened or stat'ed.
Result<OpenFile> open_readonly(const char* path);

// Reads exactly `size` bytes at `offset` (retrying short reads and EINTR); AccessFailed on a read error or an
// early end of file. The caller has checked the range against the file size.
Error read_at(int fd, uint64_t offset, uint64_t size, void* destination);

}  // namespace internal
}  // namespace ember
