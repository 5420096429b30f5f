#include "runtime/core/memory_allocator.h"

#include <gtest/gtest.h>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

TEST(MemoryAllocator, AlignsAndCounts) {
  alignas(64) uint8_t buffer[128];
  MemoryAllocator a(buffer, sizeof(buffer));
  void* p1 = a.allocate(3, 1);
  void* p2 = a.allocate(8, 16);
  ASSERT_NE(p1, nullptr);
  ASSERT_NE(p2, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p2) % 16, 0u);
  EXPECT_EQ(a.used_bytes(), 24u);  // 3 + 13 padding + 8
  EXPECT_EQ(a.free_bytes(), 104u);
  a.reset();
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_EQ(a.peak_bytes(), 24u);
}

TEST(MemoryAllocator, FailureReportsRequestedAndAvailable) {
  alignas(16) uint8_t buffer[64];
  MemoryAllocator a(buffer, sizeof(buffer));
  ASSERT_NE(a.allocate(40, 16), nullptr);
  EXPECT_EQ(a.allocate(32, 16), nullptr);  // 8 padding + 32 > 24 free
  EXPECT_EQ(a.last_failed_request(), 40u);
  EXPECT_EQ(a.last_failed_available(), 24u);
  EXPECT_EQ(testing::last_log(),
            "memory allocation failed: 40 bytes requested (after alignment), 24 bytes available of 64");
  EXPECT_EQ(a.allocate(8, 3), nullptr);  // not a power of two
  EXPECT_EQ(testing::last_log(), "alignment 3 is not a power of two");
  EXPECT_EQ(a.allocate(8, 0), nullptr);
  EXPECT_EQ(a.allocate_list<uint64_t>(SIZE_MAX / 4), nullptr);  // n * size overflows: reported as SIZE_MAX
  EXPECT_EQ(a.last_failed_request(), SIZE_MAX);
  EXPECT_EQ(a.used_bytes(), 40u);  // failures take nothing
  EXPECT_NE(a.allocate(24, 8), nullptr);  // exactly what is left
  EXPECT_EQ(a.free_bytes(), 0u);
  EXPECT_EQ(a.allocate(0, 1), static_cast<void*>(buffer + 64));  // an empty request at the end still succeeds
}

TEST(MemoryAllocator, TypedHelpers) {
  alignas(16) uint8_t buffer[64];
  MemoryAllocator a(buffer, sizeof(buffer));
  double* d = a.allocate_instance<double>();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % alignof(double), 0u);
  int32_t* list = a.allocate_list<int32_t>(5);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(a.used_bytes(), 28u);
}

}  // namespace
}  // namespace ember
