// The memory a method runs in, all provided by the caller: the method allocator (the runtime's bookkeeping:
// values, tensor descriptions, argument lists; MethodMeta::method_allocator_bytes() says exactly how much), the
// planned pools (sizes from MethodMeta::memory_planned_buffer_size), and scratch for kernels.
#pragma once

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"

namespace ember {

struct MemoryManager {
  MemoryAllocator* method_allocator = nullptr;
  HierarchicalAllocator* planned_memory = nullptr;
  MemoryAllocator* temp_allocator = nullptr;  // may be null: kernels that need scratch then fail cleanly
};

}  // namespace ember
