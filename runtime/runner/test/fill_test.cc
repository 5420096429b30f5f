#include <gtest/gtest.h>

#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "runtime/runner/fill.h"

namespace ember {
namespace {

// The spec in a heap block of exactly its bytes, as argv strings are laid out: under --config=asan a read past
// its end is reported (fill_generated once looked at byte 6 of "ones" and "zeros").
std::vector<float> fill_floats(const std::string& spec, int64_t n) {
  char* exact = static_cast<char*>(malloc(spec.size() + 1));
  memcpy(exact, spec.c_str(), spec.size() + 1);
  std::vector<float> out(static_cast<size_t>(n), -7.0f);
  EXPECT_TRUE(is_generated_spec(exact)) << spec;
  EXPECT_EQ(fill_generated(ScalarType::Float, out.data(), n, exact), Error::Ok) << spec;
  free(exact);
  return out;
}

TEST(Fill, ZerosAndOnes) {
  EXPECT_EQ(fill_floats("zeros", 3), std::vector<float>(3, 0.0f));
  EXPECT_EQ(fill_floats("ones", 3), std::vector<float>(3, 1.0f));
}

TEST(Fill, RandomSeeds) {
  const std::vector<float> unseeded = fill_floats("random", 8);
  EXPECT_EQ(unseeded, fill_floats("random:42", 8));  // the default seed
  EXPECT_NE(unseeded, fill_floats("random:7", 8));
  EXPECT_EQ(fill_floats("random:7", 8), fill_floats("random:7", 8));
  for (float v : unseeded) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

TEST(Fill, SpecsThatAreFiles) {
  EXPECT_FALSE(is_generated_spec("random7"));
  EXPECT_FALSE(is_generated_spec("zero"));
  EXPECT_FALSE(is_generated_spec("input.bin"));
}

TEST(Fill, DtypeWithoutGenerator) {
  uint8_t out[2];
  EXPECT_EQ(fill_generated(ScalarType::Float8_e4m3fn, out, 2, "ones"), Error::NotSupported);
}

// "ones" on Bool is all true (it once drew 1 >= 5: all false; found by tests/fuzz:runner_fill_fuzz).
TEST(Fill, OnesAndZerosOfEveryIntegerWidthAndBool) {
  bool b[3];
  ASSERT_EQ(fill_generated(ScalarType::Bool, b, 3, "ones"), Error::Ok);
  EXPECT_TRUE(b[0] && b[1] && b[2]);
  ASSERT_EQ(fill_generated(ScalarType::Bool, b, 3, "zeros"), Error::Ok);
  EXPECT_FALSE(b[0] || b[1] || b[2]);
  int16_t s[2];
  ASSERT_EQ(fill_generated(ScalarType::Short, s, 2, "ones"), Error::Ok);
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[1], 1);
}

}  // namespace
}  // namespace ember
