#include "runtime/core/probe.h"
#include <gtest/gtest.h>
TEST(P, P) { EXPECT_EQ(probe(), 1); }
