// add, sub, mul, div: ATen semantics (broadcasting, alpha, computing in the output's dtype; Half and BFloat16
// through float).
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// Integers wrap on overflow, as in PyTorch (plain signed arithmetic would be undefined).
struct Add {
  template <typename C>
  C operator()(C a, C b, C alpha) const { return wrapping_add(a, wrapping_mul(alpha, b)); }
};
struct Sub {
  template <typename C>
  C operator()(C a, C b, C alpha) const { return wrapping_sub(a, wrapping_mul(alpha, b)); }
};
struct Mul {
  template <typename C>
  C operator()(C a, C b, C) const { return wrapping_mul(a, b); }
};
struct Div {
  template <typename C>
  C operator()(C a, C b, C) const { return a / b; }
};

// PyTorch computes an integer tensor with a floating-point scalar (or alpha) in floating point, so such a call
// with an integer out is a program PyTorch would have refused; converting the scalar would give other numbers.
bool integer_out_takes(const Tensor& out, const Scalar& s) {
  return !s.is_floating() || is_floating(out.scalar_type());
}

template <uint32_t Mask, typename Op>
void binary_tensor(KernelContext& ctx, const char* name, const Tensor& a, const Tensor& b, const Scalar& alpha,
                   Tensor& out) {
  int32_t shape[kMaxTensorDim];
  const int n = broadcast_shape(a.sizes(), b.sizes(), shape);
  EMBER_KERNEL_CHECK(ctx, n >= 0, InvalidArgument, "%s: shapes of rank %d and %d do not broadcast", name,
                     static_cast<int>(a.dim()), static_cast<int>(b.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(n)), InvalidArgument,
                     "%s: out has rank %d, the broadcast result rank %d or other sizes", name,
                     static_cast<int>(out.dim()), n);
  EMBER_KERNEL_CHECK(ctx, a.is_contiguous() && b.is_contiguous() && out.is_contiguous(), NotSupported,
                     "%s: non-contiguous dim order", name);
  EMBER_KERNEL_CHECK(ctx, integer_out_takes(out, alpha), InvalidArgument,
                     "%s: alpha %g is a float but out is %s; an integer result needs an integer alpha", name,
                     alpha.to_double(), scalar_type_name(out.scalar_type()));
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const C al = alpha.to<C>();
    const Op op;
    T* o = out.mutable_data_ptr<T>();
    const int64_t total = out.numel();
    const ScalarType st = out.scalar_type();
    if (a.scalar_type() == st && b.scalar_type() == st && a.numel() == total && b.numel() == total) {
      const T* x = a.const_data_ptr<T>();
      const T* y = b.const_data_ptr<T>();
      for (int64_t i = 0; i < total; ++i) o[i] = static_cast<T>(op(static_cast<C>(x[i]), static_cast<C>(y[i]), al));
      return;
    }
    const BroadcastIndexer ia(a.sizes(), shape, n), ib(b.sizes(), shape, n);
    for (int64_t i = 0; i < total; ++i) {
      const C x = load_as<C>(a.const_data_ptr(), a.scalar_type(), ia(i));
      const C y = load_as<C>(b.const_data_ptr(), b.scalar_type(), ib(i));
      o[i] = static_cast<T>(op(x, y, al));
    }
  });
}

template <uint32_t Mask, typename Op>
void binary_scalar(KernelContext& ctx, const char* name, const Tensor& a, const Scalar& b, const Scalar& alpha,
                   Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, a.sizes()), InvalidArgument, "%s: out's shape differs from self's", name);
  EMBER_KERNEL_CHECK(ctx, integer_out_takes(out, b) && integer_out_takes(out, alpha), InvalidArgument,
                     "%s: scalar %g or alpha %g is a float but out is %s; an integer result needs integer scalars",
                     name, b.to_double(), alpha.to_double(), scalar_type_name(out.scalar_type()));
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const C y = b.to<C>(), al = alpha.to<C>();
    const Op op;
    T* o = out.mutable_data_ptr<T>();
    const int64_t total = out.numel();
    if (a.scalar_type() == out.scalar_type()) {
      const T* x = a.const_data_ptr<T>();
      for (int64_t i = 0; i < total; ++i) o[i] = static_cast<T>(op(static_cast<C>(x[i]), y, al));
    } else {
      for (int64_t i = 0; i < total; ++i) o[i] = static_cast<T>(op(load_as<C>(a.const_data_ptr(), a.scalar_type(), i), y, al));
    }
  });
}

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  binary_tensor<selected_dtypes::add_out_portable, Add>(ctx, "add.out", self, other, alpha, out);
}
void add_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  binary_scalar<selected_dtypes::add_scalar_out_portable, Add>(ctx, "add.Scalar_out", self, other, alpha, out);
}
void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  binary_tensor<selected_dtypes::sub_out_portable, Sub>(ctx, "sub.out", self, other, alpha, out);
}
void sub_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  binary_scalar<selected_dtypes::sub_scalar_out_portable, Sub>(ctx, "sub.Scalar_out", self, other, alpha, out);
}
void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor<selected_dtypes::mul_out_portable, Mul>(ctx, "mul.out", self, other, Scalar(int64_t{1}), out);
}
void mul_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {
  binary_scalar<selected_dtypes::mul_scalar_out_portable, Mul>(ctx, "mul.Scalar_out", self, other,
                                                               Scalar(int64_t{1}), out);
}
void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor<selected_dtypes::div_out_portable, Div>(ctx, "div.out", self, other, Scalar(int64_t{1}), out);
}
void div_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {
  binary_scalar<selected_dtypes::div_scalar_out_portable, Div>(ctx, "div.Scalar_out", self, other,
                                                               Scalar(int64_t{1}), out);
}

}  // namespace portable
}  // namespace ember
