// clamp with tensor bounds and masked_fill: elementwise over three broadcast operands, on the shared loop.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/elementwise_util.h"

namespace ember {
namespace portable {
namespace {

// min(max(x, lo), hi) with a missing bound skipped; a NaN in x or in a given bound makes the result NaN, as
// PyTorch's clamp (and its maximum/minimum, which it uses for one-sided bounds) propagate it.
struct ClampBounds {
  bool has_lo, has_hi;
  template <typename C>
  C operator()(C x, C lo, C hi) const {
    if (x != x) return x;
    if (has_lo && lo != lo) return lo;
    if (has_hi && hi != hi) return hi;
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
};

struct Fill {
  template <typename C>
  C operator()(C x, bool m, C v) const {
    return m ? v : x;
  }
};

}  // namespace

void clamp_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor* min, const Tensor* max, Tensor& out) {
  const char* name = "clamp.Tensor_out";
  EMBER_KERNEL_CHECK(ctx, min != nullptr || max != nullptr, InvalidArgument,
                     "%s: at least one of min and max must be given", name);
  const Tensor* in[3] = {&self, min, max};
  ElementwiseShape s;
  if (!elementwise_shape(ctx, name, in, 3, out, &s)) return;
  ResultType rt;
  rt.add(self);
  if (min != nullptr) rt.add(*min);
  if (max != nullptr) rt.add(*max);
  const ScalarType compute = rt.ok() ? rt.get() : ScalarType::Float;
  if (!elementwise_types(ctx, name, rt, compute, out)) return;
  // Bool too, as eager (clamp_min/clamp_max of Bool tensors export as this op): x < lo is !x && lo.
  EMBER_DISPATCH(ctx, name, selected_dtypes::clamp_tensor_out_portable & kRealAndBoolTypes, compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Scalar none(int64_t{0});
    ClampBounds op{min != nullptr, max != nullptr};
    const Reader<T> x(self, s, 0);
    const Reader<T> lo = min != nullptr ? Reader<T>(*min, s, 1) : Reader<T>(none);
    const Reader<T> hi = max != nullptr ? Reader<T>(*max, s, 2) : Reader<T>(none);
    elementwise_run<T>(out, op, x, lo, hi);
  });
}

void masked_fill_scalar_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, const Scalar& value,
                            Tensor& out) {
  const char* name = "masked_fill.Scalar_out";
  const Tensor* in[3] = {&self, &mask, nullptr};
  ElementwiseShape s;
  if (!elementwise_shape(ctx, name, in, 3, out, &s)) return;
  EMBER_KERNEL_CHECK(ctx, mask.scalar_type() == ScalarType::Bool, InvalidArgument,
                     "%s: mask is %s; masked_fill only takes a Bool mask", name, scalar_type_name(mask.scalar_type()));
  ResultType rt;
  rt.add(self);
  if (!elementwise_types(ctx, name, rt, self.scalar_type(), out)) return;
  EMBER_DISPATCH(ctx, name, selected_dtypes::masked_fill_scalar_out_portable, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Fill op;
    elementwise_run<T>(out, op, Reader<T>(self, s, 0), Reader<Bool8>(mask, s, 1), Reader<T>(value));
  });
}

}  // namespace portable
}  // namespace ember
