// Element types: enum class ScalarType, its names and sizes come from the format contract
// (schema/scalar_types.yaml, generated into schema/scalar_type_table.h); this header adds what kernels need.
//
// Kernels dispatch over compile-time lists of these (see `dispatch_dtype`), so a build that selects Float
// only compiles the Float body of a kernel, with no runtime string compare.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "runtime/core/bfloat16.h"
#include "runtime/core/bool8.h"
#include "runtime/core/half.h"
#include "schema/scalar_type_table.h"

namespace ember {

constexpr bool is_valid_scalar_type(int v) { return v >= 0 && v < kNumScalarTypes; }

// Bytes per element; 0 for a type the runtime has no storage for (complex) or an invalid number.
size_t element_size(ScalarType t);

// "Float" for ScalarType::Float; "Unknown" for an invalid number.
const char* scalar_type_name(ScalarType t);

constexpr uint32_t dtype_bit(ScalarType t) { return 1u << static_cast<int>(t); }

constexpr bool is_floating(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Half || t == ScalarType::BFloat16;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short || t == ScalarType::Int ||
         t == ScalarType::Long || t == ScalarType::UInt16 || t == ScalarType::UInt32 || t == ScalarType::UInt64 ||
         (include_bool && t == ScalarType::Bool);
}

// The C++ type of each computable ScalarType, and back.
template <ScalarType T>
struct CppTypeOf;
template <typename T>
struct ScalarTypeOf;

#define EMBER_INTERNAL_SCALAR_PAIR(cpp, st)             \
  template <>                                           \
  struct CppTypeOf<ScalarType::st> {                    \
    using type = cpp;                                   \
  };                                                    \
  template <>                                           \
  struct ScalarTypeOf<cpp> {                            \
    static constexpr ScalarType value = ScalarType::st; \
  };
EMBER_FOR_EACH_CPP_SCALAR_TYPE(EMBER_INTERNAL_SCALAR_PAIR)
#undef EMBER_INTERNAL_SCALAR_PAIR
// Predicates compute and store `bool` (always 0 or 1); Bool tensors are read as Bool8 (see bool8.h).
template <>
struct ScalarTypeOf<bool> {
  static constexpr ScalarType value = ScalarType::Bool;
};

template <ScalarType T>
using cpp_type_t = typename CppTypeOf<T>::type;

// Whether the runtime can compute on ScalarType T (complex and quantized storage types have no C++ type here).
template <ScalarType T, typename = void>
struct HasCppType : std::false_type {};
template <ScalarType T>
struct HasCppType<T, std::void_t<typename CppTypeOf<T>::type>> : std::true_type {};

// Dispatch: calls fn(TypeTag<C>{}) with C the C++ type of `t`, trying only the types in `Mask` (bit n =
// ScalarType n). Types outside the mask generate no code. Returns false when `t` is not in the mask.
template <typename T>
struct TypeTag {
  using type = T;
};

namespace internal {
template <uint32_t Mask, int N>
struct Dispatcher {
  template <typename Fn>
  static bool run(ScalarType t, Fn&& fn) {
    if constexpr (N < 0) {
      (void)t;
      (void)fn;
      return false;
    } else {
      constexpr ScalarType kType = static_cast<ScalarType>(N);
      if constexpr ((Mask >> N) & 1u) {
        if constexpr (HasCppType<kType>::value) {
          if (t == kType) {
            fn(TypeTag<cpp_type_t<kType>>{});
            return true;
          }
        }
      }
      return Dispatcher<Mask, N - 1>::run(t, static_cast<Fn&&>(fn));
    }
  }
};
}  // namespace internal

template <uint32_t Mask, typename Fn>
bool dispatch_dtype(ScalarType t, Fn&& fn) {
  return internal::Dispatcher<Mask, kNumScalarTypes - 1>::run(t, static_cast<Fn&&>(fn));
}

// Common masks.
constexpr uint32_t kFloatingTypes = dtype_bit(ScalarType::Float) | dtype_bit(ScalarType::Double) |
                                    dtype_bit(ScalarType::Half) | dtype_bit(ScalarType::BFloat16);
constexpr uint32_t kIntegralTypes = dtype_bit(ScalarType::Byte) | dtype_bit(ScalarType::Char) |
                                    dtype_bit(ScalarType::Short) | dtype_bit(ScalarType::Int) |
                                    dtype_bit(ScalarType::Long);
constexpr uint32_t kRealTypes = kFloatingTypes | kIntegralTypes;
constexpr uint32_t kRealAndBoolTypes = kRealTypes | dtype_bit(ScalarType::Bool);

}  // namespace ember
