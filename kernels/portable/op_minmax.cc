// Extremes over dims: amin.out, argmax.out, argmin.out, max.dim_max, min.dim_min, max.unary_out, min.unary_out
// (amax.out, in op_select.cc, shares the same walk). NaN propagates and its first index wins; of equal values the
// first index wins; a reduction over an empty dim is an error, as in ATen.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/reduce_util.h"

namespace ember {
namespace portable {
namespace {

template <uint32_t Mask, bool Max>
void arg_extreme(KernelContext& ctx, const char* name, const Tensor& self, Optional<int64_t> dim, bool keepdim,
                 Tensor& out) {
  ReducePlan plan;
  // No dim: the index into the flattened input (keepdim gives every dim size 1).
  const int64_t d = dim.has_value() ? dim.value() : 0;
  EMBER_KERNEL_CHECK(ctx,
                     make_reduce_plan(self, dim.has_value() ? &d : nullptr, dim.has_value() ? 1 : 0, true, keepdim,
                                      plan),
                     InvalidArgument, "%s: dim %lld out of range for a %d-d input", name, static_cast<long long>(d),
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() != ScalarType::Bool, InvalidArgument,
                     "%s: Bool input is not supported "
                     "(as in ATen)",
                     name);
  extreme<Mask, Max>(ctx, name, self, plan, nullptr, &out);
}

template <uint32_t Mask, bool Max>
void dim_extreme(KernelContext& ctx, const char* name, const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                 Tensor& indices) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(self, &dim, 1, true, keepdim, plan), InvalidArgument,
                     "%s: dim %lld out of range for a %d-d input", name, static_cast<long long>(dim),
                     static_cast<int>(self.dim()));
  extreme<Mask, Max>(ctx, name, self, plan, &values, &indices);
}

template <uint32_t Mask, bool Max>
void all_extreme(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out) {
  ReducePlan plan;
  make_reduce_plan(self, nullptr, 0, true, false, plan);  // no dims: cannot fail
  extreme<Mask, Max>(ctx, name, self, plan, &out, nullptr);
}

}  // namespace

void amin_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dim, bool keepdim, Tensor& out) {
  amax_amin<selected_dtypes::amin_out_portable, false>(ctx, "amin.out", self, dim, keepdim, out);
}

void argmax_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dim, bool keepdim, Tensor& out) {
  arg_extreme<selected_dtypes::argmax_out_portable, true>(ctx, "argmax.out", self, dim, keepdim, out);
}

void argmin_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dim, bool keepdim, Tensor& out) {
  arg_extreme<selected_dtypes::argmin_out_portable, false>(ctx, "argmin.out", self, dim, keepdim, out);
}

void max_dim_max_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& max,
                     Tensor& max_values) {
  dim_extreme<selected_dtypes::max_dim_max_out_portable, true>(ctx, "max.dim_max", self, dim, keepdim, max, max_values);
}

void min_dim_min_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& min,
                     Tensor& min_indices) {
  dim_extreme<selected_dtypes::min_dim_min_out_portable, false>(ctx, "min.dim_min", self, dim, keepdim, min,
                                                                min_indices);
}

void max_unary_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  all_extreme<selected_dtypes::max_unary_out_portable, true>(ctx, "max.unary_out", self, out);
}

void min_unary_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  all_extreme<selected_dtypes::min_unary_out_portable, false>(ctx, "min.unary_out", self, out);
}

}  // namespace portable
}  // namespace ember
