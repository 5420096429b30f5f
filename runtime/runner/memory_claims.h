// What a method says it needs (every planned pool, the method allocator, the kernels' scratch) read and checked before a host runner
// allocates any of it: a .pte is untrusted, and one claiming terabytes must be refused with its numbers, not
// handed to malloc (which may fail, or worse, succeed lazily and fault on first touch).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/executor/method_meta.h"

namespace ember {

struct MemoryClaims {
  static constexpr size_t kMaxPools = 16;
  size_t num_pools = 0;
  size_t pool_bytes[kMaxPools] = {};
  size_t method_allocator_bytes = 0;
  size_t scratch_bytes = 0;  // the temp allocator's exact size (MethodMeta::scratch_bytes, for the threads)
  uint64_t total_bytes = 0;  // pools + method allocator + scratch
};

// Reads the claims of `meta` into `claims` and checks them against `available` bytes. On refusal returns false and writes one line to `why` naming the method,
// each claim over the limit and the limit; nothing has been allocated.
bool read_memory_claims(const MethodMeta& meta, uint64_t available, MemoryClaims* claims, char* why, size_t why_size);
// The same for a method loaded for `threads` threads (MemoryManager::threads): its scratch is then
// MethodMeta::scratch_bytes(threads). A separate function, so single-threaded builds link none of it.
bool read_memory_claims(const MethodMeta& meta, uint64_t available, MemoryClaims* claims, char* why, size_t why_size,
                        int threads);

// The machine's physical memory in bytes (sysconf, or GlobalMemoryStatusEx on Windows: host_memory_*.cc), or UINT64_MAX when it cannot be known.
uint64_t physical_memory_bytes();

}  // namespace ember
