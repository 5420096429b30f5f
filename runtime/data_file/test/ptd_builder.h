// Builds .ptd files for tests: flatc's builder for the tables, and the FH01 header inserted after the identifier as
// ExecuTorch's serializer lays it out. The builder is compiled apart (ptd_builder.cc): flat_tensor_generated.h and
// the executor tests' object-API headers share a ScalarType include guard, so one file cannot include both.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace ember {
namespace testing {

struct Entry {
  std::string key;
  std::vector<float> values;
  std::vector<int32_t> sizes;
};

// A .ptd of float tensors, each segment at a multiple of 128 bytes, as ExecuTorch's serializer writes it.
std::vector<uint8_t> make_ptd(const std::vector<Entry>& entries);

}  // namespace testing
}  // namespace ember
