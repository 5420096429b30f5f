#include "runtime/core/loader/open_file.h"

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

}  // namespace internal
}  // namespace ember
