#include <stdlib.h>
#include <unistd.h>

#include "runtime/runner/host_memory.h"
#include "runtime/runner/memory_claims.h"

namespace ember {

void* host_aligned_alloc(size_t alignment, size_t bytes) { return aligned_alloc(alignment, bytes); }

void host_aligned_free(void* p) { free(p); }

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;
  const uint64_t p = static_cast<uint64_t>(pages), s = static_cast<uint64_t>(page);
  return p > UINT64_MAX / s ? UINT64_MAX : p * s;
}

}  // namespace ember
