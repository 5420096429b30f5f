#include "runtime/core/scalar_type.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace ember {
namespace {

TEST(ScalarType, NumberingMatchesThePteSchema) {
  EXPECT_EQ(static_cast<int>(ScalarType::Float), 6);
  EXPECT_EQ(static_cast<int>(ScalarType::Bool), 11);
  EXPECT_EQ(static_cast<int>(ScalarType::BFloat16), 15);
  EXPECT_EQ(static_cast<int>(ScalarType::UInt64), 29);
  EXPECT_EQ(element_size(ScalarType::Long), 8u);
  EXPECT_EQ(element_size(ScalarType::Half), 2u);
  EXPECT_EQ(element_size(ScalarType::ComplexFloat), 0u);
  EXPECT_EQ(element_size(static_cast<ScalarType>(99)), 0u);
  EXPECT_STREQ(scalar_type_name(ScalarType::Float), "Float");
  EXPECT_FALSE(is_valid_scalar_type(30));
}

TEST(Half, KnownBitPatterns) {
  // Values and their binary16 encodings (checked against torch.tensor(v, dtype=torch.half).view(torch.int16)).
  struct Case {
    float value;
    uint16_t bits;
  } cases[] = {{1.0f, 0x3c00},          {-2.0f, 0xc000},    {65504.0f, 0x7bff},   {0.1f, 0x2e66}, {1e-7f, 0x0002},
               {5.9604645e-8f, 0x0001}, {65520.0f, 0x7c00}, {1.0009766f, 0x3c01}, {0.0f, 0x0000}};
  for (const Case& c : cases) {
    EXPECT_EQ(Half(c.value).bits, c.bits) << c.value;
  }
  // Ties go to even: 1 + 2^-11 lies halfway between 0x3c00 and 0x3c01.
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  EXPECT_EQ(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  for (uint32_t b = 0; b < 0x7c00; ++b) {  // every finite positive half survives a round trip
    ASSERT_EQ(Half(static_cast<float>(Half::from_bits(static_cast<uint16_t>(b)))).bits, b);
  }
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(INFINITY))));
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-3.140625f).bits, 0xc049);
  float halfway;
  uint32_t u = 0x3f808000u;  // exactly between 0x3f80 and 0x3f81: to even (0x3f80)
  std::memcpy(&halfway, &u, 4);
  EXPECT_EQ(BFloat16(halfway).bits, 0x3f80);
  u = 0x3f818000u;  // between 0x3f81 and 0x3f82: to even (0x3f82)
  std::memcpy(&halfway, &u, 4);
  EXPECT_EQ(BFloat16(halfway).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  EXPECT_EQ(BFloat16(3.4e38f).bits, 0x7f80);  // rounds past the largest finite bfloat16: infinity, as in torch
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every non-NaN bfloat16 survives a round trip through float
    if ((b & 0x7fffu) > 0x7f80u) continue;
    ASSERT_EQ(BFloat16(static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(b)))).bits, b);
  }
}

TEST(Dispatch, CompilesOnlyTheMaskedTypes) {
  int seen = 0;
  auto record = [&](auto tag) {
    using T = typename decltype(tag)::type;
    seen = static_cast<int>(ScalarTypeOf<T>::value);
  };
  constexpr uint32_t kMask = dtype_bit(ScalarType::Float) | dtype_bit(ScalarType::Int);
  EXPECT_TRUE(dispatch_dtype<kMask>(ScalarType::Int, record));
  EXPECT_EQ(seen, 3);
  EXPECT_TRUE(dispatch_dtype<kMask>(ScalarType::Float, record));
  EXPECT_EQ(seen, 6);
  EXPECT_FALSE(dispatch_dtype<kMask>(ScalarType::Double, record));  // not selected: refused, not aborted
  EXPECT_FALSE(dispatch_dtype<kRealAndBoolTypes>(ScalarType::ComplexFloat, record));
}

}  // namespace
}  // namespace ember
