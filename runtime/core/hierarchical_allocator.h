// The planned pools of a method: numbered buffers the caller provides (one per memory id, in whatever memory it
// chooses), resolved by the (memory id, offset, size) a .pte records. Pure pointer arithmetic with bounds and
// overflow checks: a .pte is untrusted, so every range is checked before it becomes a pointer.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/log.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace ember {

class HierarchicalAllocator {
 public:
  // buffers[i] is pool i + 1's memory (memory id 0 is the constants and is never planned).
  explicit HierarchicalAllocator(Span<Span<uint8_t>> buffers) : buffers_(buffers) {}

  size_t num_buffers() const { return buffers_.size(); }

  Result<void*> get_offset_address(uint32_t memory_id, uint64_t offset, uint64_t size) const {
    EMBER_CHECK_OR_RETURN_ERROR(memory_id >= 1 && memory_id <= buffers_.size(), MemoryAllocationFailed,
                                "memory id %u has no buffer (%zu planned buffers were provided)",
                                static_cast<unsigned>(memory_id), buffers_.size());
    const Span<uint8_t>& buffer = buffers_[memory_id - 1];
    EMBER_CHECK_OR_RETURN_ERROR(offset <= buffer.size() && size <= buffer.size() - offset, MemoryAllocationFailed,
                                "bytes [%llu, %llu + %llu) are outside memory id %u's buffer of %zu bytes",
                                static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset),
                                static_cast<unsigned long long>(size), static_cast<unsigned>(memory_id), buffer.size());
    return static_cast<void*>(buffer.data() + offset);
  }

 private:
  Span<Span<uint8_t>> buffers_;
};

}  // namespace ember
