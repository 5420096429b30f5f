#include "runtime/core/scalar_type.h"

namespace ember {

namespace {
struct Info {
  const char* name;
  uint8_t size;
};
// Indexed by ScalarType number.
constexpr Info kInfo[kNumScalarTypes] = {
    {"Byte", 1},          {"Char", 1},         {"Short", 2},          {"Int", 4},
    {"Long", 8},          {"Half", 2},         {"Float", 4},          {"Double", 8},
    {"ComplexHalf", 0},   {"ComplexFloat", 0}, {"ComplexDouble", 0},  {"Bool", 1},
    {"QInt8", 1},         {"QUInt8", 1},       {"QInt32", 4},         {"BFloat16", 2},
    {"QUInt4x2", 1},      {"QUInt2x4", 1},     {"Bits1x8", 1},        {"Bits2x4", 1},
    {"Bits4x2", 1},       {"Bits8", 1},        {"Bits16", 2},         {"Float8_e5m2", 1},
    {"Float8_e4m3fn", 1}, {"Float8_e5m2fnuz", 1}, {"Float8_e4m3fnuz", 1}, {"UInt16", 2},
    {"UInt32", 4},        {"UInt64", 8},
};
}  // namespace

size_t element_size(ScalarType t) {
  const int i = static_cast<int>(t);
  return is_valid_scalar_type(i) ? kInfo[i].size : 0;
}

const char* scalar_type_name(ScalarType t) {
  const int i = static_cast<int>(t);
  return is_valid_scalar_type(i) ? kInfo[i].name : "Unknown";
}

}  // namespace ember
