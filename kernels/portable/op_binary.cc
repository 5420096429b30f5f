// add, sub, rsub, mul, div, atan2, maximum, minimum, pow: ATen semantics (broadcasting, type promotion, alpha;
// Half and BFloat16 through float), over the shared elementwise loop (util/elementwise_util.h).
#include <cmath>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/elementwise_util.h"

namespace ember {
namespace portable {
namespace {

constexpr uint32_t kNumbers = kRealTypes;  // no Bool: PyTorch refuses arithmetic on Bool for these ops

// alpha in the computing type; held as both so the functor needs no conversion per element.
struct Alpha {
  double d;
  int64_t i;
  explicit Alpha(const Scalar& s) : d(s.to_double()), i(s.to<int64_t>()) {}
  template <typename C>
  C as() const {
    if constexpr (std::is_floating_point<C>::value) {
      return static_cast<C>(d);
    } else {
      return static_cast<C>(i);
    }
  }
};

// Integers wrap on overflow, as in PyTorch (plain signed arithmetic would be undefined).
struct Add {
  Alpha alpha;
  template <typename C>
  C operator()(C a, C b) const {
    return wrapping_add(a, wrapping_mul(alpha.as<C>(), b));
  }
};
struct Sub {
  Alpha alpha;
  template <typename C>
  C operator()(C a, C b) const {
    return wrapping_sub(a, wrapping_mul(alpha.as<C>(), b));
  }
};
struct Rsub {
  Alpha alpha;
  template <typename C>
  C operator()(C a, C b) const {
    return wrapping_sub(b, wrapping_mul(alpha.as<C>(), a));
  }
};
struct Mul {
  template <typename C>
  C operator()(C a, C b) const {
    return wrapping_mul(a, b);
  }
};
struct Div {
  template <typename C>
  C operator()(C a, C b) const {
    return a / b;
  }
};
struct Atan2 {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(std::atan2(a, b));
  }
};
// NaN wins, as in PyTorch's maximum/minimum (std::max would return either operand).
struct Maximum {
  template <typename C>
  C operator()(C a, C b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? b : a;
  }
};
struct Minimum {
  template <typename C>
  C operator()(C a, C b) const {
    if (a != a) return a;
    if (b != b) return b;
    return b < a ? b : a;
  }
};
// Integer powers by squaring (wrapping); a negative exponent gives 0 except for bases 1 and -1, as in PyTorch.
struct Pow {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point<C>::value) {
      return static_cast<C>(std::pow(a, b));
    } else {
      if constexpr (std::is_signed<C>::value) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b & 1) ? C(-1) : C(1);
          return 0;
        }
      }
      C result = 1;
      while (b) {
        if (b & 1) result = wrapping_mul(result, a);
        b = static_cast<C>(b >> 1);
        a = wrapping_mul(a, a);
      }
      return result;
    }
  }
};

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  elementwise_binary<selected_dtypes::add_out_portable, kNumbers, Result::kPromoted>(ctx, "add.out", self, other, out,
                                                                                     Add{Alpha(alpha)}, &alpha);
}
void add_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  elementwise_binary<selected_dtypes::add_scalar_out_portable, kNumbers, Result::kPromoted>(ctx, "add.Scalar_out", self,
                                                                                            other, out,
                                                                                            Add{Alpha(alpha)}, &alpha);
}
void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  elementwise_binary<selected_dtypes::sub_out_portable, kNumbers, Result::kPromoted>(ctx, "sub.out", self, other, out,
                                                                                     Sub{Alpha(alpha)}, &alpha);
}
void sub_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  elementwise_binary<selected_dtypes::sub_scalar_out_portable, kNumbers, Result::kPromoted>(ctx, "sub.Scalar_out", self,
                                                                                            other, out,
                                                                                            Sub{Alpha(alpha)}, &alpha);
}
void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  elementwise_binary<selected_dtypes::mul_out_portable, kNumbers, Result::kPromoted>(ctx, "mul.out", self, other, out,
                                                                                     Mul{});
}
void mul_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {
  elementwise_binary<selected_dtypes::mul_scalar_out_portable, kNumbers, Result::kPromoted>(ctx, "mul.Scalar_out", self,
                                                                                            other, out, Mul{});
}
void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  elementwise_binary<selected_dtypes::div_out_portable, kFloatingTypes, Result::kFloating>(ctx, "div.out", self, other,
                                                                                           out, Div{});
}
void div_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {
  elementwise_binary<selected_dtypes::div_scalar_out_portable, kFloatingTypes, Result::kFloating>(ctx, "div.Scalar_out",
                                                                                                  self, other, out,
                                                                                                  Div{});
}

// --- binary family (issue 15) ---
void rsub_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  elementwise_binary<selected_dtypes::rsub_scalar_out_portable, kNumbers, Result::kPromoted>(ctx, "rsub.Scalar_out",
                                                                                             self, other, out,
                                                                                             Rsub{Alpha(alpha)},
                                                                                             &alpha);
}
void atan2_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  elementwise_binary<selected_dtypes::atan2_out_portable, kFloatingTypes, Result::kFloating>(ctx, "atan2.out", self,
                                                                                             other, out, Atan2{});
}
void maximum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  elementwise_binary<selected_dtypes::maximum_out_portable, kRealAndBoolTypes, Result::kPromoted>(ctx, "maximum.out",
                                                                                                  self, other, out,
                                                                                                  Maximum{});
}
void minimum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  elementwise_binary<selected_dtypes::minimum_out_portable, kRealAndBoolTypes, Result::kPromoted>(ctx, "minimum.out",
                                                                                                  self, other, out,
                                                                                                  Minimum{});
}
void pow_tensor_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& exponent, Tensor& out) {
  elementwise_binary<selected_dtypes::pow_tensor_tensor_out_portable, kNumbers, Result::kPromoted>(
      ctx, "pow.Tensor_Tensor_out", self, exponent, out, Pow{});
}
void pow_scalar_out(KernelContext& ctx, const Scalar& self, const Tensor& exponent, Tensor& out) {
  elementwise_binary<selected_dtypes::pow_scalar_out_portable, kNumbers, Result::kPromoted>(ctx, "pow.Scalar_out", self,
                                                                                            exponent, out, Pow{});
}

}  // namespace portable
}  // namespace ember
