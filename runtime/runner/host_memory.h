// The host runners' own aligned buffers, from the C library of each target family: aligned_alloc/free where C11
// has them, _aligned_malloc/_aligned_free on Windows (whose C runtime has no aligned_alloc, and whose aligned
// blocks must not go to free()). physical_memory_bytes (memory_claims.h) lives beside them, per family.
#pragma once

#include <stddef.h>

namespace ember {

// `alignment` is a power of two; `bytes` a multiple of it. nullptr when the allocation fails.
void* host_aligned_alloc(size_t alignment, size_t bytes);

// Frees what host_aligned_alloc returned (nullptr is a no-op).
void host_aligned_free(void* p);

}  // namespace ember
