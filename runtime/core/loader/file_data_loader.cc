#include "runtime/core/loader/file_data_loader.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "runtime/core/loader/open_file.h"
#include "runtime/core/log.h"

namespace ember {

Result<FileDataLoader> FileDataLoader::open(const char* path, MemoryAllocator* allocator) {
  EMBER_TRY_ASSIGN(file, internal::open_readonly(path));
  return FileDataLoader(file.fd, file.size, allocator);
}

FileDataLoader::FileDataLoader(FileDataLoader&& other)
    : fd_(other.fd_), file_size_(other.file_size_), allocator_(other.allocator_) {
  other.fd_ = -1;
}

FileDataLoader::~FileDataLoader() {
  if (fd_ >= 0) ::close(fd_);
}

Error FileDataLoader::load_into(uint64_t offset, uint64_t size, const SegmentInfo&, void* destination) {
  EMBER_TRY(check_range(offset, size, file_size_));
  uint8_t* out = static_cast<uint8_t*>(destination);
  while (size > 0) {
    const ssize_t n = pread(fd_, out, static_cast<size_t>(size), static_cast<off_t>(offset));
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

Result<FreeableBuffer> FileDataLoader::load(uint64_t offset, uint64_t size, const SegmentInfo& info) {
  EMBER_TRY(check_range(offset, size, file_size_));
  EMBER_CHECK_OR_RETURN_ERROR(allocator_ != nullptr, InvalidState,
                              "FileDataLoader::load of %llu bytes needs a MemoryAllocator; none was given",
                              static_cast<unsigned long long>(size));
  void* buffer = allocator_->allocate(static_cast<size_t>(size), 16);
  EMBER_CHECK_OR_RETURN_ERROR(buffer != nullptr, MemoryAllocationFailed,
                              "no room to load %llu bytes at offset %llu (%zu bytes free)",
                              static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset),
                              allocator_->free_bytes());
  EMBER_TRY(load_into(offset, size, info, buffer));
  return FreeableBuffer(buffer, static_cast<size_t>(size));
}

}  // namespace ember
