#include "schema/argument_codes.h"

#include <gtest/gtest.h>
#include <string.h>

#include <string>

#include "schema/program_generated.h"
#include "schema/scalar_type_table.h"

namespace ember {
namespace {

constexpr Tag kTags[] = {Tag::None,
                         Tag::Int,
                         Tag::Double,
                         Tag::Bool,
                         Tag::Tensor,
                         Tag::String,
                         Tag::IntList,
                         Tag::DoubleList,
                         Tag::BoolList,
                         Tag::TensorList,
                         Tag::OptionalTensorList};

static_assert(argument_code_accepts('T', Tag::Tensor) && !argument_code_accepts('T', Tag::None),
              "usable in constant expressions");

TEST(ArgumentCodes, OptionalCodesAndOnlyThoseAcceptNone) {
  int codes = 0;
  for (int c = 1; c < 128; ++c) {
    const std::string meaning = argument_code_meaning(static_cast<char>(c));
    if (meaning == "no argument code") {
      for (Tag t : kTags) EXPECT_FALSE(argument_code_accepts(static_cast<char>(c), t)) << c;
      continue;
    }
    ++codes;
    const bool optional = meaning.size() > 8 && meaning.compare(meaning.size() - 8, 8, " or None") == 0;
    const bool ignored = meaning.compare(0, 7, "ignored") == 0;
    EXPECT_EQ(argument_code_accepts(static_cast<char>(c), Tag::None), optional || ignored) << meaning;
    int accepted = 0;
    for (Tag t : kTags) accepted += argument_code_accepts(static_cast<char>(c), t);
    EXPECT_GE(accepted, 1) << meaning;
    if (ignored) {
      EXPECT_EQ(accepted, static_cast<int>(sizeof(kTags) / sizeof(kTags[0])));
    }
  }
  EXPECT_EQ(codes, 20);  // 19th and 20th: E, "float[]?" (upsample scales), and z, "str?" (div's rounding_mode)
}

TEST(ArgumentCodes, ScalarsAreNumbersOrBools) {
  for (Tag t : kTags) {
    EXPECT_EQ(argument_code_accepts('s', t), t == Tag::Int || t == Tag::Double || t == Tag::Bool);
  }
}

// The flatc enum (from the generated scalar_type.fbs) and ember::ScalarType (from scalar_type_table.h) come from
// one list by two generators: every .pte name is the C++ name upper-cased without underscores, at the same number.
TEST(ScalarTypeTables, PteEnumAgreesWithTheRuntimeEnum) {
  int n = 0;
  for (ember_pte::ScalarType v : ember_pte::EnumValuesScalarType()) {
    const int i = static_cast<int>(v);
    ASSERT_GE(i, 0);
    ASSERT_LT(i, kNumScalarTypes);
    std::string want;
    for (const char* p = kScalarTypeInfo[i].name; *p; ++p) {
      if (*p != '_') want += static_cast<char>(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    }
    EXPECT_EQ(want, ember_pte::EnumNameScalarType(v));
    EXPECT_GT(kScalarTypeInfo[i].element_size, 0) << want;
    ++n;
  }
  EXPECT_EQ(n, 23);
}

}  // namespace
}  // namespace ember
