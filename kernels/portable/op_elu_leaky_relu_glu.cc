// Activations with parameters: elu and leaky_relu (elementwise, through the shared unary loop) and glu (the
// first half of a dimension gated by the sigmoid of the second). Floating-point dtypes only, as PyTorch on CPU.
#include <cmath>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/unary_util.h"

namespace ember {
namespace portable {

void elu_out(KernelContext& ctx, const Tensor& self, const Scalar& alpha, const Scalar& scale,
             const Scalar& input_scale, Tensor& out) {
  // PyTorch's form: x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale (a NaN stays NaN).
  const double neg_coef = alpha.to_double() * scale.to_double(), pos_coef = scale.to_double();
  const double in_coef = input_scale.to_double();
  unary_map<selected_dtypes::elu_out_portable & kFloatingTypes, false>(ctx, "elu.out", self, out, [=](auto x) {
    using C = decltype(x);
    return x <= C(0) ? std::expm1(x * static_cast<C>(in_coef)) * static_cast<C>(neg_coef)
                     : x * static_cast<C>(pos_coef);
  });
}

void leaky_relu_out(KernelContext& ctx, const Tensor& self, const Scalar& negative_slope, Tensor& out) {
  const double slope = negative_slope.to_double();
  unary_map<selected_dtypes::leaky_relu_out_portable & kFloatingTypes, false>(ctx, "leaky_relu.out", self, out,
                                                                              [slope](auto x) {
                                                                                using C = decltype(x);
                                                                                return x > C(0)
                                                                                           ? x
                                                                                           : x * static_cast<C>(slope);
                                                                              });
}

void glu_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  const int64_t rank = self.dim();
  EMBER_KERNEL_CHECK(ctx, rank > 0, InvalidArgument, "glu.out: self is 0-dim; glu halves a dimension");
  EMBER_KERNEL_CHECK(ctx, dim >= -rank && dim < rank, InvalidArgument,
                     "glu.out: dim %lld is out of range for rank %lld", static_cast<long long>(dim),
                     static_cast<long long>(rank));
  const size_t d = static_cast<size_t>(dim < 0 ? dim + rank : dim);
  const int32_t size = self.sizes()[d];
  EMBER_KERNEL_CHECK(ctx, size % 2 == 0, InvalidArgument,
                     "glu.out: dimension %zu has size %d; halving it needs an even size", d, static_cast<int>(size));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type(), InvalidArgument,
                     "glu.out: self is %s but out is %s; they must match", scalar_type_name(self.scalar_type()),
                     scalar_type_name(out.scalar_type()));
  int32_t shape[kMaxTensorDim];
  for (size_t i = 0; i < static_cast<size_t>(rank); ++i) shape[i] = self.sizes()[i];
  shape[d] = size / 2;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(rank)), InvalidArgument,
                     "glu.out: out must be self's shape with dimension %zu halved to %d", d,
                     static_cast<int>(size / 2));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous() && out.is_contiguous(), NotSupported,
                     "glu.out: only the contiguous dim order is supported");
  // Rows of `half` elements: the gate of each row starts `half` elements after its value.
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= self.sizes()[i];
  for (size_t i = d + 1; i < static_cast<size_t>(rank); ++i) inner *= self.sizes()[i];
  const int64_t half = static_cast<int64_t>(size / 2) * inner;
  EMBER_DISPATCH(ctx, "glu.out", selected_dtypes::glu_out_portable & kFloatingTypes, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    // Nothing to write; the leading dims of an empty self may still claim billions of rows
    // (kernel_fuzz, tools/fuzz.sh long at 9de737d, after 9.3M executions).
    if (out.numel() == 0) return;
    const T* x = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* a = x + r * 2 * half;
      const T* b = a + half;
      T* y = o + r * half;
      for (int64_t i = 0; i < half; ++i) {
        const C g = static_cast<C>(b[i]);
        y[i] = static_cast<T>(static_cast<C>(a[i]) * (C(1) / (C(1) + std::exp(-g))));
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
