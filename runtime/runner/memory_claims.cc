#include "runtime/runner/memory_claims.h"

#include <stdio.h>

namespace ember {
namespace {

// a + b, or UINT64_MAX when that overflows: a sum of hostile claims must not wrap into a small number.
uint64_t add_saturating(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

bool read_memory_claims(const MethodMeta& meta, uint64_t available, MemoryClaims* claims, char* why, size_t why_size) {
  *claims = MemoryClaims{};
  const size_t n = meta.num_memory_planned_buffers();
  if (n > MemoryClaims::kMaxPools) {
    snprintf(why, why_size, "method '%s' plans %zu memory pools; this runner handles %zu", meta.name(), n,
             MemoryClaims::kMaxPools);
    return false;
  }
  claims->num_pools = n;
  uint64_t total = 0;
  for (size_t p = 0; p < n; ++p) {
    Result<size_t> size = meta.memory_planned_buffer_size(p);
    if (!size.ok()) {
      snprintf(why, why_size, "method '%s' pool %zu has no valid size: %s", meta.name(), p + 1,
               error_name(size.error()));
      return false;
    }
    claims->pool_bytes[p] = *size;
    total = add_saturating(total, *size);
  }
  claims->method_allocator_bytes = meta.method_allocator_bytes();
  total = add_saturating(total, claims->method_allocator_bytes);
  claims->scratch_bytes = meta.scratch_bytes();
  total = add_saturating(total, claims->scratch_bytes);
  claims->total_bytes = total;
  if (total <= available) return true;

  // Name the biggest claim: with several pools, that is the one to look at.
  size_t biggest = 0;
  for (size_t p = 1; p < n; ++p) biggest = claims->pool_bytes[p] > claims->pool_bytes[biggest] ? p : biggest;
  const bool pool_biggest = n > 0 && claims->pool_bytes[biggest] >= claims->method_allocator_bytes;
  int w =
      snprintf(why, why_size, "method '%s' claims %llu bytes (", meta.name(), static_cast<unsigned long long>(total));
  if (w > 0 && static_cast<size_t>(w) < why_size) {
    if (pool_biggest) {
      w += snprintf(why + w, why_size - static_cast<size_t>(w), "pool %zu: %zu bytes", biggest + 1,
                    claims->pool_bytes[biggest]);
    } else {
      w += snprintf(why + w, why_size - static_cast<size_t>(w), "method allocator: %zu bytes",
                    claims->method_allocator_bytes);
    }
  }
  if (w > 0 && static_cast<size_t>(w) < why_size) {
    snprintf(why + w, why_size - static_cast<size_t>(w),
             ") but this machine has %llu bytes of memory; refused before allocating any of it",
             static_cast<unsigned long long>(available));
  }
  return false;
}

bool read_memory_claims(const MethodMeta& meta, uint64_t available, MemoryClaims* claims, char* why, size_t why_size,
                        int threads) {
  if (!read_memory_claims(meta, available, claims, why, why_size)) return false;
  if (threads <= 1) return true;
  // Kernels that give each thread a scratch slice of their own (depthwise convolution, attention) add theirs.
  const size_t threaded = meta.scratch_bytes(threads);
  claims->total_bytes = add_saturating(claims->total_bytes, threaded - claims->scratch_bytes);
  claims->scratch_bytes = threaded;
  if (claims->total_bytes <= available) return true;
  snprintf(why, why_size,
           "method '%s' claims %llu bytes (kernel scratch for %d threads: %zu bytes) but this machine has %llu bytes "
           "of memory; refused before allocating any of it",
           meta.name(), static_cast<unsigned long long>(claims->total_bytes), threads, threaded,
           static_cast<unsigned long long>(available));
  return false;
}

}  // namespace ember
