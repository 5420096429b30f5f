#include "runtime/core/loader/mmap_data_loader.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/core/loader/open_file.h"
#include "runtime/core/log.h"

namespace ember {

Result<MmapDataLoader> MmapDataLoader::open(const char* path) {
  EMBER_TRY_ASSIGN(file, internal::open_readonly(path));
  const int fd = file.fd;
  const uint64_t size = file.size;
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
