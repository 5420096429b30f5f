#include "runtime/core/loader/mmap_data_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/core/log.h"

namespace ember {

Result<MmapDataLoader> MmapDataLoader::open(const char* path) {
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
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      EMBER_LOG(ERROR, "cannot map %s (%llu bytes): %s", path, static_cast<unsigned long long>(size), strerror(errno));
      ::close(fd);
      return Error::AccessFailed;
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return MmapDataLoader(data, size);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other) : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MmapDataLoader::~MmapDataLoader() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
}

Result<FreeableBuffer> MmapDataLoader::load(uint64_t offset, uint64_t size, const SegmentInfo&) {
  EMBER_TRY(check_range(offset, size, size_));
  return FreeableBuffer(data_ + offset, static_cast<size_t>(size));
}

Error MmapDataLoader::load_into(uint64_t offset, uint64_t size, const SegmentInfo&, void* destination) {
  EMBER_TRY(check_range(offset, size, size_));
  memcpy(destination, data_ + offset, static_cast<size_t>(size));
  return Error::Ok;
}

}  // namespace ember
