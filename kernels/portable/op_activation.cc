// Elementwise activations: relu, hardtanh (ReLU6), sigmoid, tanh, gelu (exact and tanh), silu, hardswish, exp.
#include <math.h>
#include <string.h>

#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

template <uint32_t Mask, typename F>
void unary(KernelContext& ctx, const char* name, const Tensor& in, Tensor& out, F f) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, in.sizes()), InvalidArgument, "%s: out's shape differs from self's", name);
  EMBER_KERNEL_CHECK(ctx, in.scalar_type() == out.scalar_type(), InvalidArgument, "%s: self is %s but out is %s", name,
                     scalar_type_name(in.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_DISPATCH(ctx, name, Mask, in.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = in.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(f(static_cast<C>(x[i])));
  });
}

}  // namespace

void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::relu_out_portable>(ctx, "relu.out", self, out,
                                            [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
}

namespace {

// Bounds for clamp and hardtanh in the compute type C. PyTorch clamps as min(max(x, lo), hi) with NaN-propagating
// min/max: a NaN bound makes every element NaN for floating types; for integer types a NaN bound, or one outside
// the type's range, is an error (its "value cannot be converted to type int without overflow").
template <typename C>
bool integer_bound_ok(bool has, double v) {
  return !std::is_integral<C>::value || !has || fits<C>(v);
}

template <typename C>
C clamp_value(C x, bool has_lo, C lo, bool has_hi, C hi, bool nan_bound) {
  if (nan_bound) return lo != lo ? lo : hi;  // floating types only: integer bounds were checked
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

template <uint32_t Mask>
void clamp_kernel(KernelContext& ctx, const char* name, const Tensor& self, bool has_lo, double lo, bool has_hi,
                  double hi, Tensor& out) {
  bool bounds_ok = true;
  const bool nan_bound = (has_lo && lo != lo) || (has_hi && hi != hi);
  const bool dispatched = dispatch_dtype<Mask>(self.scalar_type(), [&](auto tag) {
    using C = compute_t<typename decltype(tag)::type>;
    bounds_ok = integer_bound_ok<C>(has_lo, lo) && integer_bound_ok<C>(has_hi, hi);
  });
  EMBER_KERNEL_CHECK(ctx, !dispatched || bounds_ok, InvalidArgument,
                     "%s: bounds [%g, %g] do not fit %s (NaN or out of its range)", name, has_lo ? lo : -INFINITY,
                     has_hi ? hi : INFINITY, scalar_type_name(self.scalar_type()));
  unary<Mask>(ctx, name, self, out, [=](auto x) {
    using C = decltype(x);
    return clamp_value(x, has_lo, convert<C>(lo), has_hi, convert<C>(hi), nan_bound);
  });
}

}  // namespace

void hardtanh_out(KernelContext& ctx, const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out) {
  clamp_kernel<selected_dtypes::hardtanh_out_portable>(ctx, "hardtanh.out", self, true, min_val.to_double(), true,
                                                       max_val.to_double(), out);
}

void sigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::sigmoid_out_portable>(ctx, "sigmoid.out", self, out, [](auto x) {
    using C = decltype(x);
    return static_cast<C>(1) / (static_cast<C>(1) + static_cast<C>(exp(-static_cast<double>(x))));
  });
}

void tanh_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::tanh_out_portable>(ctx, "tanh.out", self, out, [](auto x) {
    return static_cast<decltype(x)>(tanh(static_cast<double>(x)));
  });
}

void exp_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::exp_out_portable>(ctx, "exp.out", self, out, [](auto x) {
    return static_cast<decltype(x)>(exp(static_cast<double>(x)));
  });
}

void gelu_out(KernelContext& ctx, const Tensor& self, StringView approximate, Tensor& out) {
  const bool use_tanh = approximate.size == 4 && memcmp(approximate.data, "tanh", 4) == 0;
  EMBER_KERNEL_CHECK(ctx, use_tanh || (approximate.size == 4 && memcmp(approximate.data, "none", 4) == 0),
                     InvalidArgument, "gelu.out: approximate must be 'none' or 'tanh', got '%.*s'",
                     static_cast<int>(approximate.size), approximate.data);
  unary<selected_dtypes::gelu_out_portable>(ctx, "gelu.out", self, out, [use_tanh](auto x) {
    using C = decltype(x);
    const double v = static_cast<double>(x);
    if (use_tanh) return static_cast<C>(0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
    return static_cast<C>(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));
  });
}

void log_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::log_out_portable>(ctx, "log.out", self, out, [](auto x) {
    return static_cast<decltype(x)>(log(static_cast<double>(x)));
  });
}

void sqrt_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::sqrt_out_portable>(ctx, "sqrt.out", self, out, [](auto x) {
    return static_cast<decltype(x)>(sqrt(static_cast<double>(x)));
  });
}

void rsqrt_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::rsqrt_out_portable>(ctx, "rsqrt.out", self, out, [](auto x) {
    return static_cast<decltype(x)>(1.0 / sqrt(static_cast<double>(x)));
  });
}

void neg_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  // Integers wrap: -INT_MIN is INT_MIN, as in PyTorch.
  unary<selected_dtypes::neg_out_portable>(ctx, "neg.out", self, out, [](auto x) { return wrapping_neg(x); });
}

void abs_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::abs_out_portable>(ctx, "abs.out", self, out,
                                           [](auto x) { return x < decltype(x)(0) ? wrapping_neg(x) : x; });
}

void pow_tensor_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& exponent, Tensor& out) {
  const double e = exponent.to_double();
  // Squares (RMSNorm's x.pow(2), 4% of an 8da4w decoder's decode in libm's pow) as one multiply: the double
  // product of two floats or of integers up to 2^26 is exact, as pow's is, so the result is the same bits.
  if (e == 2.0) {
    return unary<selected_dtypes::pow_tensor_scalar_out_portable>(ctx, "pow.Tensor_Scalar_out", self, out, [](auto x) {
      const double d = static_cast<double>(x);
      return static_cast<decltype(x)>(d * d);
    });
  }
  unary<selected_dtypes::pow_tensor_scalar_out_portable>(ctx, "pow.Tensor_Scalar_out", self, out, [e](auto x) {
    return static_cast<decltype(x)>(pow(static_cast<double>(x), e));
  });
}

void clamp_out(KernelContext& ctx, const Tensor& self, Optional<Scalar> min, Optional<Scalar> max, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, min.has_value() || max.has_value(), InvalidArgument, "clamp.out: min and max are both None");
  const bool has_lo = min.has_value(), has_hi = max.has_value();
  clamp_kernel<selected_dtypes::clamp_out_portable>(ctx, "clamp.out", self, has_lo,
                                                    has_lo ? min.value().to_double() : 0.0, has_hi,
                                                    has_hi ? max.value().to_double() : 0.0, out);
}

void silu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::silu_out_portable>(ctx, "silu.out", self, out, [](auto x) {
    using C = decltype(x);
    return static_cast<C>(static_cast<double>(x) / (1.0 + exp(-static_cast<double>(x))));
  });
}

void hardswish_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  unary<selected_dtypes::hardswish_out_portable>(ctx, "hardswish.out", self, out, [](auto x) {
    using C = decltype(x);
    const C r6 = x + static_cast<C>(3) < static_cast<C>(0)
                     ? static_cast<C>(0)
                     : (x + static_cast<C>(3) > static_cast<C>(6) ? static_cast<C>(6) : x + static_cast<C>(3));
    return x * r6 / static_cast<C>(6);
  });
}

}  // namespace portable
}  // namespace ember
