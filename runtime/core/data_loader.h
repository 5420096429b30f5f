// Where a program's bytes come from: memory, a file, an mmap, flash. The runtime asks for ranges (the program
// header, then each segment when it needs it), so large constants can stay where they are.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/freeable_buffer.h"
#include "runtime/core/result.h"

namespace ember {

struct SegmentInfo {
  enum class Type : uint8_t { Program, Constant, Backend, Mutable, External };
  Type type = Type::Program;
  size_t segment_index = 0;
};

// Loaders are owned by the application and only borrowed (as DataLoader*) by the runtime, which never deletes
// one. So the destructor is protected and not virtual: a virtual one would emit a deleting destructor that
// references operator delete, pulling the heap into every bare-metal binary that has a loader.
class DataLoader {
 public:
  // Bytes [offset, offset + size), valid until the returned buffer is freed.
  virtual Result<FreeableBuffer> load(uint64_t offset, uint64_t size, const SegmentInfo& info) = 0;

  // Copies bytes [offset, offset + size) into `destination` (for loaders that cannot hand out pointers, and for
  // initial values that must land in planned memory).
  virtual Error load_into(uint64_t offset, uint64_t size, const SegmentInfo& info, void* destination) = 0;

  // Total bytes available.
  virtual Result<uint64_t> size() const = 0;

 protected:
  DataLoader() = default;
  DataLoader(const DataLoader&) = default;
  DataLoader& operator=(const DataLoader&) = default;
  ~DataLoader() = default;
};

// Checks that [offset, offset + size) lies within `total`, including 64-bit overflow of offset + size.
inline Error check_range(uint64_t offset, uint64_t size, uint64_t total) {
  EMBER_CHECK_OR_RETURN_ERROR(offset <= total && size <= total - offset, InvalidArgument,
                              "bytes [%llu, %llu + %llu) are outside the %llu bytes of data",
                              static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset),
                              static_cast<unsigned long long>(size), static_cast<unsigned long long>(total));
  return Error::Ok;
}

}  // namespace ember
