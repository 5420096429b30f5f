#include "runtime/core/log.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

TEST(Log, FormatsThroughThePal) {
  EMBER_LOG(ERROR, "%zu bytes at offset %d in %s", size_t{48}, -1, "pool");
  EXPECT_EQ(testing::last_log(), "48 bytes at offset -1 in pool");
}

TEST(Log, CutsLongMessagesAtTheStackBuffer) {
  // 300 characters into a 256-byte buffer: the PAL gets the first 255, not an overflow.
  const std::string long_text(300, 'x');
  EMBER_LOG(INFO, "%s!", long_text.c_str());
  EXPECT_EQ(testing::last_log(), std::string(255, 'x'));
}

}  // namespace
}  // namespace ember
