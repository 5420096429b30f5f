#include <malloc.h>
#include <windows.h>

#include "runtime/runner/host_memory.h"
#include "runtime/runner/memory_claims.h"

namespace ember {

void* host_aligned_alloc(size_t alignment, size_t bytes) { return _aligned_malloc(bytes, alignment); }

void host_aligned_free(void* p) { _aligned_free(p); }

uint64_t physical_memory_bytes() {
  MEMORYSTATUSEX status;
  status.dwLength = sizeof(status);
  if (!GlobalMemoryStatusEx(&status) || status.ullTotalPhys == 0) return UINT64_MAX;
  return status.ullTotalPhys;
}

}  // namespace ember
