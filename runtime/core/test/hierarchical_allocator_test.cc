#include "runtime/core/hierarchical_allocator.h"

#include <gtest/gtest.h>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

TEST(HierarchicalAllocator, ResolvesAndChecks) {
  uint8_t sram[64];
  uint8_t ddr[256];
  Span<uint8_t> buffers[2] = {Span<uint8_t>(sram), Span<uint8_t>(ddr)};
  HierarchicalAllocator h(Span<Span<uint8_t>>(buffers, 2));
  EXPECT_EQ(*h.get_offset_address(1, 16, 48), sram + 16);
  EXPECT_EQ(*h.get_offset_address(2, 0, 256), ddr);
  EXPECT_EQ(h.get_offset_address(1, 16, 49).error(), Error::MemoryAllocationFailed);
  EXPECT_EQ(testing::last_log(), "bytes [16, 16 + 49) are outside memory id 1's buffer of 64 bytes");
  EXPECT_EQ(h.get_offset_address(3, 0, 1).error(), Error::MemoryAllocationFailed);
  EXPECT_EQ(testing::last_log(), "memory id 3 has no buffer (2 planned buffers were provided)");
  EXPECT_EQ(h.get_offset_address(0, 0, 1).error(), Error::MemoryAllocationFailed);
  // offset + size wraps around 64 bits: still refused.
  EXPECT_EQ(h.get_offset_address(2, 8, UINT64_MAX - 4).error(), Error::MemoryAllocationFailed);
}

}  // namespace
}  // namespace ember
