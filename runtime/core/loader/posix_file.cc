#include "runtime/core/loader/posix_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/core/log.h"

namespace ember {
namespace internal {

Result<OpenFile> open_readonly(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    EMBER_LOG(ERROR, "cannot open %s: %s", path, strerror(errno));
    return Error::AccessFailed;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    EMBER_LOG(ERROR, "cannot stat %s: %s", path, strerror(errno));
    ::close(fd);
    return Error::AccessFailed;
  }
  return OpenFile{fd, static_cast<uint64_t>(st.st_size)};
}

Error read_at(int fd, uint64_t offset, uint64_t size, void* destination) {
  uint8_t* out = static_cast<uint8_t*>(destination);
  while (size > 0) {
    const ssize_t n = pread(fd, out, static_cast<size_t>(size), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      EMBER_LOG(ERROR, "read of %llu bytes at offset %llu failed: %s", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(offset), n < 0 ? strerror(errno) : "unexpected end of file");
      return Error::AccessFailed;
    }
    out += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<uint64_t>(n);
  }
  return Error::Ok;
}

}  // namespace internal
}  // namespace ember
