#include "runtime/core/memory_allocator.h"

#include "runtime/core/log.h"

namespace ember {

void MemoryAllocator::record_failure(size_t requested, size_t available) {
  failed_request_ = requested;
  failed_available_ = available;
  EMBER_LOG(ERROR, "memory allocation failed: %zu bytes requested (after alignment), %zu bytes available of %zu",
            requested, available, size_);
}

void* MemoryAllocator::allocate(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    EMBER_LOG(ERROR, "alignment %zu is not a power of two", alignment);
    return nullptr;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(begin_) + used_;
  const size_t padding = static_cast<size_t>((alignment - (start & (alignment - 1))) & (alignment - 1));
  const size_t available = size_ - used_;
  if (padding > available || size > available - padding) {
    record_failure(size > SIZE_MAX - padding ? SIZE_MAX : size + padding, available);
    return nullptr;
  }
  void* p = begin_ + used_ + padding;
  used_ += padding + size;
  if (used_ > peak_) peak_ = used_;
  return p;
}

}  // namespace ember
