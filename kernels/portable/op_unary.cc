// Elementwise unary math: the float-valued functions (trigonometric, hyperbolic, erf, expm1, logarithms,
// reciprocal, logit), which take any real or Bool input and give a floating-point out as PyTorch promotes; the
// rounding functions and sign, which keep self's dtype (integers pass through); isinf/isnan (Bool out);
// bitwise_not, logical_not and _conj_physical (a copy: the runtime stores no complex dtype).
#include <math.h>
#include <string.h>

#include <cmath>
#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/unary_util.h"

namespace ember {
namespace portable {
namespace {

// Float-valued ops compute only for floating-point outs, whatever integer dtypes the manifest lists for self.
template <uint32_t Mask, typename Op>
void float_unary(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out, const Op& op) {
  EMBER_KERNEL_CHECK(ctx, is_floating(out.scalar_type()), InvalidArgument,
                     "%s: out is %s; the result is floating point, so out must be Half, BFloat16, Float or Double",
                     name, scalar_type_name(out.scalar_type()));
  unary_map<Mask & kFloatingTypes, true>(ctx, name, self, out, op);
}

// Round half to even, as PyTorch (std::nearbyint would depend on the floating-point environment's mode).
template <typename C>
C round_half_even(C x) {
  const C r = std::round(x);
  if (std::fabs(x - r) == static_cast<C>(0.5)) return static_cast<C>(2) * std::round(x * static_cast<C>(0.5));
  return r;
}

// The rounding functions are the identity on integers.
template <uint32_t Mask, typename Op>
void rounding_unary(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out, const Op& op) {
  unary_map<Mask & kRealTypes, false>(ctx, name, self, out, [&op](auto x) {
    if constexpr (std::is_integral<decltype(x)>::value) {
      return x;
    } else {
      return op(x);
    }
  });
}

// isinf/isnan: a Bool out; integer and Bool selves are never either.
template <uint32_t Mask, typename Pred>
void unary_predicate(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out, const Pred& pred) {
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == ScalarType::Bool, InvalidArgument, "%s: out is %s, it must be Bool",
                     name, scalar_type_name(out.scalar_type()));
  if (!unary_checks(ctx, name, self, Mask & kRealAndBoolTypes, false, out)) return;
  bool* o = out.mutable_data_ptr<bool>();
  const int64_t n = out.numel();
  EMBER_DISPATCH(ctx, name, Mask & kRealAndBoolTypes, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = self.const_data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point<compute_t<T>>::value) {
        o[i] = pred(static_cast<compute_t<T>>(x[i]));
      } else {
        o[i] = false;
      }
    }
  });
}

}  // namespace

#define EMBER_FLOAT_UNARY(op, expr)                                                                           \
  void op##_out(KernelContext& ctx, const Tensor& self, Tensor& out) {                                        \
    float_unary<selected_dtypes::op##_out_portable>(ctx, #op ".out", self, out, [](auto x) { return expr; }); \
  }
EMBER_FLOAT_UNARY(acos, std::acos(x))
EMBER_FLOAT_UNARY(acosh, std::acosh(x))
EMBER_FLOAT_UNARY(asin, std::asin(x))
EMBER_FLOAT_UNARY(asinh, std::asinh(x))
EMBER_FLOAT_UNARY(atan, std::atan(x))
EMBER_FLOAT_UNARY(atanh, std::atanh(x))
EMBER_FLOAT_UNARY(cos, std::cos(x))
EMBER_FLOAT_UNARY(cosh, std::cosh(x))
EMBER_FLOAT_UNARY(erf, std::erf(x))
EMBER_FLOAT_UNARY(expm1, std::expm1(x))
EMBER_FLOAT_UNARY(log10, std::log10(x))
EMBER_FLOAT_UNARY(log1p, std::log1p(x))
EMBER_FLOAT_UNARY(log2, std::log2(x))
EMBER_FLOAT_UNARY(reciprocal, static_cast<decltype(x)>(1) / x)
EMBER_FLOAT_UNARY(sin, std::sin(x))
EMBER_FLOAT_UNARY(sinh, std::sinh(x))
EMBER_FLOAT_UNARY(tan, std::tan(x))
#undef EMBER_FLOAT_UNARY

void logit_out(KernelContext& ctx, const Tensor& self, Optional<double> eps, Tensor& out) {
  // PyTorch clamps to [eps, 1 - eps] only for eps >= 0 (a NaN or negative eps means no clamp).
  const bool clamp = eps.has_value() && eps.value() >= 0.0;
  const double e = clamp ? eps.value() : 0.0;
  float_unary<selected_dtypes::logit_out_portable>(ctx, "logit.out", self, out, [clamp, e](auto x) {
    using C = decltype(x);
    if (clamp) {
      const C lo = static_cast<C>(e), hi = static_cast<C>(1) - lo;
      x = x < lo ? lo : (x > hi ? hi : x);
    }
    return std::log(x / (static_cast<C>(1) - x));
  });
}

void ceil_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  rounding_unary<selected_dtypes::ceil_out_portable>(ctx, "ceil.out", self, out, [](auto x) { return std::ceil(x); });
}
void floor_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  rounding_unary<selected_dtypes::floor_out_portable>(ctx, "floor.out", self, out,
                                                      [](auto x) { return std::floor(x); });
}
void round_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  rounding_unary<selected_dtypes::round_out_portable>(ctx, "round.out", self, out,
                                                      [](auto x) { return round_half_even(x); });
}
void trunc_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  rounding_unary<selected_dtypes::trunc_out_portable>(ctx, "trunc.out", self, out,
                                                      [](auto x) { return std::trunc(x); });
}

void sign_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  // NaN gives 0, as in PyTorch; Bool is its own sign.
  unary_map<selected_dtypes::sign_out_portable & kRealAndBoolTypes, false>(ctx, "sign.out", self, out, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_same<C, bool>::value) {
      return x;
    } else {
      return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
    }
  });
}

void isinf_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary_predicate<selected_dtypes::isinf_out_portable>(ctx, "isinf.out", self, out,
                                                       [](auto x) { return std::isinf(x); });
}
void isnan_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary_predicate<selected_dtypes::isnan_out_portable>(ctx, "isnan.out", self, out, [](auto x) { return x != x; });
}

void bitwise_not_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  constexpr uint32_t kMask = selected_dtypes::bitwise_not_out_portable & (kIntegralTypes | dtype_bit(ScalarType::Bool));
  unary_map<kMask, false>(ctx, "bitwise_not.out", self, out, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_same<C, bool>::value) {
      return !x;
    } else {
      return static_cast<C>(~x);
    }
  });
}

void logical_not_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  // Any real or Bool self, any real or Bool out (1 where self is zero, else 0); NaN is nonzero.
  constexpr uint32_t kMask = selected_dtypes::logical_not_out_portable & kRealAndBoolTypes;
  if (!unary_checks(ctx, "logical_not.out", self, kLoadableTypes, false, out)) return;
  EMBER_DISPATCH(ctx, "logical_not.out", kMask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.mutable_data_ptr<T>();
    const int64_t n = out.numel();
    bool buf[kLoadBlock];
    for (int64_t s = 0; s < n; s += kLoadBlock) {
      const int64_t m = n - s < kLoadBlock ? n - s : kLoadBlock;
      load_block<bool>(self, s, m, buf);
      for (int64_t j = 0; j < m; ++j) o[s + j] = static_cast<T>(buf[j] ? 0.0f : 1.0f);
    }
  });
}

void conj_physical_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  // Real dtypes only (complex has no storage here), for which the conjugate is a copy.
  if (!unary_checks(ctx, "_conj_physical.out", self, selected_dtypes::conj_physical_out_portable & kRealAndBoolTypes,
                    true, out)) {
    return;
  }
  if (out.mutable_data_ptr() != self.const_data_ptr())
    memmove(out.mutable_data_ptr(), self.const_data_ptr(), self.nbytes());
}

}  // namespace portable
}  // namespace ember
