// The memory a method runs in, all provided by the caller: the method allocator (the runtime's bookkeeping:
// values, tensor descriptions, argument lists; MethodMeta::method_allocator_bytes() says exactly how much), the
// planned pools (sizes from MethodMeta::memory_planned_buffer_size), and the kernels' scratch
// (MethodMeta::scratch_bytes, taken once at load).
#pragma once

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"

namespace ember {

struct MemoryManager {
  MemoryAllocator* method_allocator = nullptr;
  HierarchicalAllocator* planned_memory = nullptr;
  // May be null when MethodMeta::scratch_bytes() is 0; load refuses, naming the bytes, when it is too small.
  MemoryAllocator* temp_allocator = nullptr;
};

}  // namespace ember
