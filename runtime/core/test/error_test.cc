#include "runtime/core/error.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ember {
namespace {

TEST(Error, NumbersAreStable) {
  // These numbers are on the wire of logs and tools, and shared with ExecuTorch: never renumber.
  EXPECT_EQ(static_cast<uint32_t>(Error::Ok), 0x00u);
  EXPECT_EQ(static_cast<uint32_t>(Error::InvalidArgument), 0x12u);
  EXPECT_EQ(static_cast<uint32_t>(Error::OperatorMissing), 0x14u);
  EXPECT_EQ(static_cast<uint32_t>(Error::MemoryAllocationFailed), 0x21u);
  EXPECT_EQ(static_cast<uint32_t>(Error::InvalidProgram), 0x23u);
  EXPECT_EQ(static_cast<uint32_t>(Error::DelegateInvalidHandle), 0x32u);
}

TEST(Error, EveryCodeHasADistinctName) {
  const uint32_t codes[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
                            0x16, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x30, 0x31, 0x32};
  std::set<std::string> names;
  for (uint32_t c : codes) {
    std::string n = error_name(static_cast<Error>(c));
    EXPECT_NE(n, "UnknownError") << c;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), sizeof(codes) / sizeof(codes[0]));
  EXPECT_STREQ(error_name(Error::MemoryAllocationFailed), "MemoryAllocationFailed");
  EXPECT_STREQ(error_name(static_cast<Error>(0x99)), "UnknownError");
}

}  // namespace
}  // namespace ember
