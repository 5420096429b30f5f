// The memory a method runs in, all provided by the caller: the method allocator (the runtime's bookkeeping:
// values, tensor descriptions, argument lists; MethodMeta::method_allocator_bytes() says exactly how much), the
// planned pools (sizes from MethodMeta::memory_planned_buffer_size), and the kernels' scratch
// (MethodMeta::scratch_bytes(threads), taken once at load).
#pragma once

#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"

namespace ember {

struct MemoryManager {
  MemoryAllocator* method_allocator = nullptr;
  HierarchicalAllocator* planned_memory = nullptr;
  // May be null when MethodMeta::scratch_bytes() is 0; load refuses, naming the bytes, when it is too small.
  MemoryAllocator* temp_allocator = nullptr;
  // The most threads the method's kernels will split one call over (the pool given to Method::set_thread_pool):
  // load takes MethodMeta::scratch_bytes(threads), so kernels that give each thread its own scratch can use them
  // all. A method loaded for fewer threads than its pool has still runs, with those kernels on fewer threads.
  // 0 and 1 both mean the calling thread alone (0, so a default MemoryManager is all zeros).
  int threads = 0;
};

}  // namespace ember
