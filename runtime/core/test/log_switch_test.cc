// Built twice: as is, and with EMBER_LOG_ENABLED=0 (see BUILD.bazel). With logging off the check still returns
// its error but says nothing, and the message's text is not in the binary at all (log_strip_test greps for it).
#include <gtest/gtest.h>

#include "runtime/core/result.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

Error check_budget(size_t bytes) {
  // `limit` is read only by the message: with logging off it must not become an unused-variable error.
  const size_t limit = 64;
  EMBER_CHECK_OR_RETURN_ERROR(bytes <= 64, OutOfResources, "EMBER_STRIP_SENTINEL %zu over %zu", bytes, limit);
  return Error::Ok;
}

TEST(LogSwitch, ErrorsReturnEitherWay) {
  testing::clear_log();
  EXPECT_EQ(check_budget(10), Error::Ok);
  EXPECT_EQ(check_budget(100), Error::OutOfResources);
#if EMBER_LOG_ENABLED
  EXPECT_EQ(testing::last_log(), "EMBER_STRIP_SENTINEL 100 over 64");
#else
  EXPECT_EQ(testing::last_log(), "");
#endif
}

}  // namespace
}  // namespace ember
