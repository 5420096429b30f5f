// Heap blocks 16-byte aligned, as MethodMeta's byte counts and Method::bind_pool assume.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <memory>

namespace ember {
namespace llm {

struct FreeDeleter {
  void operator()(void* p) const { free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, FreeDeleter>;

// Never a null pointer for 0 bytes; null when the allocation fails.
inline AlignedBuffer allocate_aligned(size_t bytes) {
  if (bytes > SIZE_MAX - 32) return AlignedBuffer();
  return AlignedBuffer(static_cast<uint8_t*>(aligned_alloc(16, (bytes + 15) / 16 * 16 + 16)));
}

}  // namespace llm
}  // namespace ember
