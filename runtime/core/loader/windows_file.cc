// The Windows side of posix_file.h: the C runtime's file descriptors (so the loaders' members stay the same),
// opened in binary mode, and positional reads through the descriptor's OS handle (ReadFile with an offset, which
// like pread leaves no shared file position behind).
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <string.h>
#include <sys/stat.h>
#include <windows.h>

#include "runtime/core/loader/posix_file.h"
#include "runtime/core/log.h"

namespace ember {
namespace internal {

Result<OpenFile> open_readonly(const char* path) {
  // _O_BINARY: the default text mode would turn CR LF pairs in constant data into LF; _O_NOINHERIT is O_CLOEXEC.
  const int fd = ::_open(path, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
  if (fd < 0) {
    EMBER_LOG(ERROR, "cannot open %s: %s", path, strerror(errno));
    return Error::AccessFailed;
  }
  struct _stat64 st;
  if (::_fstat64(fd, &st) != 0) {
    EMBER_LOG(ERROR, "cannot stat %s: %s", path, strerror(errno));
    ::_close(fd);
    return Error::AccessFailed;
  }
  return OpenFile{fd, static_cast<uint64_t>(st.st_size)};
}

Error read_at(int fd, uint64_t offset, uint64_t size, void* destination) {
  const HANDLE file = reinterpret_cast<HANDLE>(::_get_osfhandle(fd));
  uint8_t* out = static_cast<uint8_t*>(destination);
  while (size > 0) {
    // ReadFile takes a 32-bit count: large reads go in chunks.
    const DWORD chunk = size > 0x40000000u ? 0x40000000u : static_cast<DWORD>(size);
    OVERLAPPED at = {};
    at.Offset = static_cast<DWORD>(offset);
    at.OffsetHigh = static_cast<DWORD>(offset >> 32);
    DWORD n = 0;
    const BOOL ok = ReadFile(file, out, chunk, &n, &at);
    if (!ok || n == 0) {
      EMBER_LOG(ERROR, "read of %llu bytes at offset %llu failed: %s (Windows error %lu)",
                static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset),
                ok ? "unexpected end of file" : "ReadFile failed",
                ok ? 0ul : static_cast<unsigned long>(GetLastError()));
      return Error::AccessFailed;
    }
    out += n;
    offset += n;
    size -= n;
  }
  return Error::Ok;
}

}  // namespace internal
}  // namespace ember
