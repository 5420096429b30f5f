// A bump allocator over one caller-owned buffer: the runtime's only source of memory besides planned pools.
// Failure returns nullptr and logs how many bytes were asked for and how many were left, and the numbers stay
// queryable, so a caller sizing buffers for a microcontroller learns exactly how much is missing.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {

class MemoryAllocator {
 public:
  static constexpr size_t kDefaultAlignment = alignof(void*);

  MemoryAllocator(void* buffer, size_t size) : begin_(static_cast<uint8_t*>(buffer)), size_(size) {}

  // nullptr when `alignment` is not a power of two or the buffer cannot hold `size` bytes at that alignment.
  void* allocate(size_t size, size_t alignment = kDefaultAlignment);

  template <typename T>
  T* allocate_instance() {
    return static_cast<T*>(allocate(sizeof(T), alignof(T)));
  }
  // nullptr on overflow of n * sizeof(T) as well as on exhaustion.
  template <typename T>
  T* allocate_list(size_t n) {
    if (n != 0 && n > SIZE_MAX / sizeof(T)) {
      record_failure(SIZE_MAX, free_bytes());
      return nullptr;
    }
    return static_cast<T*>(allocate(n * sizeof(T), alignof(T)));
  }

  void reset() { used_ = 0; }
  size_t size() const { return size_; }
  size_t used_bytes() const { return used_; }
  size_t free_bytes() const { return size_ - used_; }
  size_t peak_bytes() const { return peak_; }
  // The last failure: bytes requested (after alignment padding) and bytes that were free. 0/0 if none.
  size_t last_failed_request() const { return failed_request_; }
  size_t last_failed_available() const { return failed_available_; }

 private:
  void record_failure(size_t requested, size_t available);

  uint8_t* begin_;
  size_t size_;
  size_t used_ = 0;
  size_t peak_ = 0;
  size_t failed_request_ = 0;
  size_t failed_available_ = 0;
};

}  // namespace ember
