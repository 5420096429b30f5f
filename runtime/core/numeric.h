// Arithmetic that C++ leaves undefined and a hostile program can reach, made defined: floating-point values
// converted to integers (NaN, infinities, out of range), and integer overflow, which PyTorch's kernels wrap.
#pragma once

#include <limits>
#include <type_traits>

#include "runtime/core/bool8.h"

namespace ember {

// Whether T holds a truth value: bool, or a Bool tensor's element (Bool8).
template <typename T>
constexpr bool is_bool_type() {
  return std::is_same<T, bool>::value || std::is_same<T, Bool8>::value;
}

// static_cast<To>(v), except that a floating-point v converted to an integer type saturates to To's range and NaN
// becomes 0 (what Arm's conversion instructions do; C++ leaves both undefined, and PyTorch documents its own
// result for them as undefined). Every other conversion is the static_cast.
template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value && !is_bool_type<To>()) {
    if (v != v) return To(0);
    // Both bounds are powers of two (or 0) and exact in From: max() rounds up to 2^k, so ">=" catches it.
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Whether `v` converts to To without overflow, as PyTorch checks scalars it stores into a tensor (its "value
// cannot be converted to type ... without overflow"): integers must lie in range (fractions truncate), NaN and
// infinities only go into floating-point types.
template <typename To, typename From>
bool fits(From v) {
  if constexpr (is_bool_type<To>()) {
    return true;
  } else if constexpr (std::is_integral<To>::value) {
    if constexpr (std::is_floating_point<From>::value) {
      // min() is 0 or -2^k and max() + 1 is 2^k: both exact in From, whatever From's precision.
      return v == v && v >= static_cast<From>(std::numeric_limits<To>::min()) &&
             v < static_cast<From>(std::numeric_limits<To>::max()) + From(1);
    } else if constexpr (std::is_signed<From>::value == std::is_signed<To>::value) {
      return v >= std::numeric_limits<To>::min() && v <= std::numeric_limits<To>::max();
    } else if constexpr (std::is_signed<From>::value) {
      return v >= 0 && static_cast<unsigned long long>(v) <= std::numeric_limits<To>::max();
    } else {
      return v <= static_cast<unsigned long long>(std::numeric_limits<To>::max());
    }
  } else {
    // Floating-point To: finite values must not overflow it; NaN and infinities are values of its own.
    static_assert(std::numeric_limits<To>::is_specialized, "fits<Half or BFloat16>: check against their float max");
    const double d = static_cast<double>(v);
    const bool finite = d - d == 0.0;
    return !finite || (d <= std::numeric_limits<To>::max() && d >= -std::numeric_limits<To>::max());
  }
}

// a + b, a - b, a * b and -a for integers as two's complement, wrapping on overflow like PyTorch's kernels (for
// signed types C++ calls overflow undefined); for floating-point types the plain operators.
template <typename T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<decltype(+a)>;  // the promoted type: uint16 * uint16 would promote to int
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<decltype(+a)>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<decltype(+a)>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename T>
T wrapping_neg(T a) {
  return wrapping_sub(T(0), a);
}

}  // namespace ember
