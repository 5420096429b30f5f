// The backend table of delegate_test: "TestOffset" (below) and EmberPortable.
//
// TestOffset's blob is "OFS1" then a little-endian float c (8 bytes; an optional ninth byte 1 makes execute fail);
// its call takes one Float tensor and writes one of the same size: out = in + c. It counts inits and destroys
// so tests see the lifecycle, and lets the runtime free its blob after init.
#pragma once

#include <vector>

#include "runtime/backend/backend.h"

namespace ember {
namespace testing {

struct TestOffsetCounters {
  int inits = 0;
  int destroys = 0;
  size_t last_specs = 0;
  size_t allocator_bytes = 0;  // method allocator bytes used when init ran last
};
TestOffsetCounters& test_offset_counters();

constexpr size_t kTestOffsetStateBytes = 16;  // what init takes from the method allocator

std::vector<uint8_t> offset_blob(float c, bool fail_at_execute = false);

}  // namespace testing
}  // namespace ember
