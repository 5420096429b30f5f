// floor_divide, fmod, remainder and div with a rounding mode: Python's sign rules where PyTorch follows them
// (floor division and remainder take the divisor's sign, fmod and trunc the dividend's). An integer division by
// zero is refused, as PyTorch raises ZeroDivisionError; floating-point ones give inf and NaN.
#include <cmath>
#include <cstring>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/elementwise_util.h"

namespace ember {
namespace portable {
namespace {

constexpr uint32_t kNumbers = kRealTypes;

// Integer quotient and remainder truncated toward zero; MIN / -1 wraps (C++ leaves it undefined). Records a zero
// divisor instead of dividing.
struct IntDivision {
  bool by_zero = false;
  template <typename C>
  bool check(C b) {
    if (b == 0) by_zero = true;
    return b != 0;
  }
  template <typename C>
  static C trunc_div(C a, C b) {
    if constexpr (std::is_signed<C>::value) {
      if (b == -1) return wrapping_neg(a);
    }
    return static_cast<C>(a / b);
  }
  template <typename C>
  static C trunc_mod(C a, C b) {
    if constexpr (std::is_signed<C>::value) {
      if (b == -1) return 0;
    }
    return static_cast<C>(a % b);
  }
};

// Floor division as PyTorch computes it for floats: from fmod, so the quotient agrees with remainder() and stays
// exact where a / b would round to the next integer.
template <typename C>
C floor_div_floating(C a, C b) {
  if (b == 0) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return std::copysign(C(0), a / b);
  C floor_div = std::floor(div);
  if (div - floor_div > C(0.5)) floor_div += 1;
  return floor_div;
}

struct FloorDivide : IntDivision {
  template <typename C>
  C operator()(C a, C b) {
    if constexpr (std::is_floating_point<C>::value) {
      return floor_div_floating(a, b);
    } else {
      if (!check(b)) return 0;
      const C q = trunc_div(a, b);
      if constexpr (std::is_signed<C>::value) {
        if (trunc_mod(a, b) != 0 && (a < 0) != (b < 0)) return static_cast<C>(q - 1);
      }
      return q;
    }
  }
};
struct TruncDivide : IntDivision {
  template <typename C>
  C operator()(C a, C b) {
    if constexpr (std::is_floating_point<C>::value) {
      return std::trunc(a / b);
    } else {
      return check(b) ? trunc_div(a, b) : C(0);
    }
  }
};
struct TrueDivide {
  template <typename C>
  C operator()(C a, C b) const {
    return a / b;
  }
};
struct Fmod : IntDivision {
  template <typename C>
  C operator()(C a, C b) {
    if constexpr (std::is_floating_point<C>::value) {
      return std::fmod(a, b);
    } else {
      return check(b) ? trunc_mod(a, b) : C(0);
    }
  }
};
struct Remainder : IntDivision {
  template <typename C>
  C operator()(C a, C b) {
    C r;
    if constexpr (std::is_floating_point<C>::value) {
      r = std::fmod(a, b);
    } else {
      if (!check(b)) return 0;
      r = trunc_mod(a, b);
    }
    if constexpr (std::is_signed<C>::value || std::is_floating_point<C>::value) {
      if (r != 0 && (b < 0) != (r < 0)) r = static_cast<C>(r + b);
    }
    return r;
  }
};

template <uint32_t Mask, typename Op, typename A, typename B>
void division(KernelContext& ctx, const char* name, const A& a, const B& b, Tensor& out) {
  Op op;
  if (!elementwise_binary<Mask, kNumbers, Result::kPromoted>(ctx, name, a, b, out, op)) return;
  EMBER_KERNEL_CHECK(ctx, !op.by_zero, InvalidArgument, "%s: ZeroDivisionError (an integer divisor is 0)", name);
}

enum class Mode { kTrue, kTrunc, kFloor, kInvalid };

Mode rounding_mode(Optional<StringView> mode) {
  if (!mode.has_value()) return Mode::kTrue;
  const StringView s = mode.value();
  if (s.size == 5 && memcmp(s.data, "trunc", 5) == 0) return Mode::kTrunc;
  if (s.size == 5 && memcmp(s.data, "floor", 5) == 0) return Mode::kFloor;
  return Mode::kInvalid;
}

template <uint32_t Mask, typename B>
void div_mode(KernelContext& ctx, const char* name, const Tensor& a, const B& b, Optional<StringView> mode,
              Tensor& out) {
  switch (rounding_mode(mode)) {
    case Mode::kTrue:
      elementwise_binary<Mask, kFloatingTypes, Result::kFloating>(ctx, name, a, b, out, TrueDivide{});
      return;
    case Mode::kTrunc: return division<Mask, TruncDivide>(ctx, name, a, b, out);
    case Mode::kFloor: return division<Mask, FloorDivide>(ctx, name, a, b, out);
    case Mode::kInvalid: break;
  }
  const StringView s = mode.value();
  EMBER_KERNEL_CHECK(ctx, false, InvalidArgument,
                     "%s: rounding_mode must be None, 'trunc' or 'floor', not '%.*s' (%zu bytes)", name,
                     static_cast<int>(s.size > 32 ? 32 : s.size), s.data, s.size);
}

}  // namespace

void floor_divide_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  division<selected_dtypes::floor_divide_out_portable, FloorDivide>(ctx, "floor_divide.out", self, other, out);
}
void fmod_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  division<selected_dtypes::fmod_tensor_out_portable, Fmod>(ctx, "fmod.Tensor_out", self, other, out);
}
void fmod_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {
  division<selected_dtypes::fmod_scalar_out_portable, Fmod>(ctx, "fmod.Scalar_out", self, other, out);
}
void remainder_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  division<selected_dtypes::remainder_tensor_out_portable, Remainder>(ctx, "remainder.Tensor_out", self, other, out);
}
void remainder_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {
  division<selected_dtypes::remainder_scalar_out_portable, Remainder>(ctx, "remainder.Scalar_out", self, other, out);
}
void div_out_mode(KernelContext& ctx, const Tensor& self, const Tensor& other, Optional<StringView> rounding_mode,
                  Tensor& out) {
  div_mode<selected_dtypes::div_out_mode_portable>(ctx, "div.out_mode", self, other, rounding_mode, out);
}
void div_scalar_mode_out(KernelContext& ctx, const Tensor& self, const Scalar& other,
                         Optional<StringView> rounding_mode, Tensor& out) {
  div_mode<selected_dtypes::div_scalar_mode_out_portable>(ctx, "div.Scalar_mode_out", self, other, rounding_mode, out);
}

}  // namespace portable
}  // namespace ember
