// Reads a program from a file with pread. `load` needs memory to read into; it comes from a caller-supplied
// MemoryAllocator (no hidden heap), and running out of it is reported with the byte counts.
#pragma once

#include "runtime/core/data_loader.h"
#include "runtime/core/memory_allocator.h"

namespace ember {

class FileDataLoader final : public DataLoader {
 public:
  // `allocator` backs load(); it may be null when only load_into() is used.
  static Result<FileDataLoader> open(const char* path, MemoryAllocator* allocator);

  FileDataLoader(FileDataLoader&& other);
  FileDataLoader(const FileDataLoader&) = delete;
  FileDataLoader& operator=(const FileDataLoader&) = delete;
  FileDataLoader& operator=(FileDataLoader&&) = delete;
  ~FileDataLoader();

  Result<FreeableBuffer> load(uint64_t offset, uint64_t size, const SegmentInfo& info) override;
  Error load_into(uint64_t offset, uint64_t size, const SegmentInfo& info, void* destination) override;
  Result<uint64_t> size() const override { return file_size_; }

 private:
  FileDataLoader(int fd, uint64_t file_size, MemoryAllocator* allocator)
      : fd_(fd), file_size_(file_size), allocator_(allocator) {}

  int fd_;
  uint64_t file_size_;
  MemoryAllocator* allocator_;
};

}  // namespace ember
