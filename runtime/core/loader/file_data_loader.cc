#include "runtime/core/loader/file_data_loader.h"

#include <unistd.h>

#include "runtime/core/loader/posix_file.h"
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
  return internal::read_at(fd_, offset, size, destination);
}

Result<FreeableBuffer> FileDataLoader::load(uint64_t offset, uint64_t size, const SegmentInfo& info) {
  EMBER_TRY(check_range(offset, size, file_size_));
  EMBER_CHECK_OR_RETURN_ERROR(allocator_ != nullptr, InvalidState,
                              "FileDataLoader::load of %llu bytes needs a MemoryAllocator; none was given",
                              static_cast<unsigned long long>(size));
  EMBER_CHECK_OR_RETURN_ERROR(static_cast<uint64_t>(static_cast<size_t>(size)) == size, NotSupported,
                              "%llu bytes do not fit this target's address space",
                              static_cast<unsigned long long>(size));
  // 16: enough for any scalar type and for flatbuffers, whose tables may hold 8-byte fields.
  void* buffer = allocator_->allocate(static_cast<size_t>(size), 16);
  EMBER_CHECK_OR_RETURN_ERROR(buffer != nullptr, MemoryAllocationFailed,
                              "no room to load %llu bytes at offset %llu (%zu bytes free)",
                              static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset),
                              allocator_->free_bytes());
  EMBER_TRY(load_into(offset, size, info, buffer));
  return FreeableBuffer(buffer, static_cast<size_t>(size));
}

}  // namespace ember
