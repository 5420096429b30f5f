// Writing one Scalar into every element of a tensor, with PyTorch's overflow check ("value cannot be converted to
// type ... without overflow"), shared by the creation kernels (fill, full_like, ones, scalar_tensor).
#pragma once

#include <type_traits>

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

// Whether `v` stores into T without overflow: integers in range (a fraction truncates; NaN never fits), Bool
// takes anything, Half and BFloat16 any value within their largest finite magnitude (or a NaN or infinity).
template <typename T>
bool scalar_fits(const Scalar& v) {
  const double d = v.to_double();
  const bool finite = d - d == 0.0;
  if constexpr (std::is_same<T, Half>::value) {
    return !finite || (d <= 65504.0 && d >= -65504.0);
  } else if constexpr (std::is_same<T, BFloat16>::value) {
    return !finite || (d <= 3.3895313892515355e38 && d >= -3.3895313892515355e38);
  } else if constexpr (std::is_arithmetic<T>::value) {
    return v.is_integral() ? fits<T>(v.to<int64_t>()) : fits<T>(d);
  } else {
    return true;
  }
}

// Every element of `out` (dtype in Mask) set to `v`; fails naming `name` when `v` overflows out's dtype.
template <uint32_t Mask>
void fill_with(KernelContext& ctx, const char* name, const Scalar& v, Tensor& out) {
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    EMBER_KERNEL_CHECK(ctx, scalar_fits<T>(v), InvalidArgument,
                       "%s: value %g cannot be converted to %s without overflow", name, v.to_double(),
                       scalar_type_name(out.scalar_type()));
    const T value = static_cast<T>(v.to<compute_t<T>>());
    T* o = out.mutable_data_ptr<T>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = value;
  });
}

}  // namespace portable
}  // namespace ember
