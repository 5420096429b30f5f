// The dim walk every reduction shares: which dims of a contiguous input a reduction covers, the output's shape
// (keepdim or not), and for each output element the input offsets reduced into it, in row-major order of the
// reduced dims (so the walk's step count is the flattened index ATen's argmax and max.dim report).
#pragma once

#include <stdint.h>

#include "kernels/portable/util/kernel_util.h"
#include "runtime/core/evalue.h"

namespace ember {
namespace portable {

struct ReducePlan {
  int32_t out_shape[kMaxTensorDim];
  size_t out_rank = 0;
  int64_t out_numel = 1;
  // Elements reduced into each output element; 0 when a reduced dim is empty.
  int64_t reduced_numel = 1;
  int32_t nkept = 0, nreduced = 0;
  int32_t kept_sizes[kMaxTensorDim];
  int64_t kept_strides[kMaxTensorDim];
  int32_t reduced_sizes[kMaxTensorDim];
  int64_t reduced_strides[kMaxTensorDim];

  // Input offset of the first element reduced into output element `i` (row-major over the kept dims).
  int64_t base(int64_t i) const {
    int64_t off = 0;
    for (int32_t d = nkept - 1; d >= 0; --d) {
      off += (i % kept_sizes[d]) * kept_strides[d];
      i /= kept_sizes[d];
    }
    return off;
  }

  // Calls fn(step, offset) for every input element reduced into output element `i`.
  template <typename Fn>
  void walk(int64_t i, Fn fn) const {
    const int64_t b = base(i);
    if (nreduced <= 1) {
      const int64_t s = nreduced ? reduced_strides[0] : 0;
      for (int64_t r = 0; r < reduced_numel; ++r) fn(r, b + r * s);
      return;
    }
    int64_t coord[kMaxTensorDim] = {0};
    int64_t off = b;
    for (int64_t r = 0; r < reduced_numel; ++r) {
      fn(r, off);
      for (int32_t d = nreduced - 1; d >= 0; --d) {
        off += reduced_strides[d];
        if (++coord[d] < reduced_sizes[d]) break;
        off -= coord[d] * reduced_strides[d];
        coord[d] = 0;
      }
    }
  }
};

// Plans reducing `dims` (negative ones count from the end) of `in`, read as contiguous. No dims reduce every dim
// when `none_means_all` (sum, amax, var: an absent or empty list) and none otherwise (any.dims with []). A 0-dim
// input takes dim 0 or -1, as ATen does. False for a dim out of range or repeated.
bool make_reduce_plan(const Tensor& in, const int64_t* dims, size_t ndims, bool none_means_all, bool keepdim,
                      ReducePlan& plan);

inline bool make_reduce_plan(const Tensor& in, Optional<ArrayRef<int64_t>> dims, bool keepdim, ReducePlan& plan) {
  if (!dims.has_value()) return make_reduce_plan(in, nullptr, 0, true, keepdim, plan);
  return make_reduce_plan(in, dims.value().data(), dims.value().size(), true, keepdim, plan);
}

// Wraps a single dim argument of a `rank`-d tensor into [0, max(rank, 1)); -1 when out of range.
int64_t wrap_dim(int64_t dim, int64_t rank);

// The max (Max) or min of the elements reduced into each output element, in self's dtype, and/or the step of
// the first one: NaN wins and the first NaN is kept (ATen on CPU), equal values keep the first. Needs a plan with
// reduced_numel > 0. Compares in compute_t<T> (Half and BFloat16 as float).
template <bool Max, typename T>
void extreme_reduce(const ReducePlan& plan, const T* x, T* values, int64_t* indices) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < plan.out_numel; ++i) {
    C best = static_cast<C>(x[plan.base(i)]);
    int64_t best_step = 0;
    bool nan = best != best;
    plan.walk(i, [&](int64_t step, int64_t off) {
      if (nan) return;
      const C v = static_cast<C>(x[off]);
      if (v != v || (Max ? v > best : v < best)) {
        best = v;
        best_step = step;
        nan = v != v;
      }
    });
    if (values) values[i] = static_cast<T>(best);
    if (indices) indices[i] = best_step;
  }
}

// max/min/argmax/argmin over a plan, named `name` in errors: shape and dtype checks, then the walk; `values`
// (self's dtype) and/or `indices` (Long) may be null.
template <uint32_t Mask, bool Max>
void extreme(KernelContext& ctx, const char* name, const Tensor& self, const ReducePlan& plan, Tensor* values,
             Tensor* indices) {
  EMBER_KERNEL_CHECK(ctx, plan.reduced_numel > 0, InvalidArgument,
                     "%s: the reduction of a %d-d input with %lld elements covers an empty dim", name,
                     static_cast<int>(self.dim()), static_cast<long long>(self.numel()));
  EMBER_KERNEL_CHECK(ctx,
                     (values == nullptr || fit_output(*values, plan.out_shape, plan.out_rank)) &&
                         (indices == nullptr || fit_output(*indices, plan.out_shape, plan.out_rank)),
                     InvalidArgument, "%s: outputs have the wrong shape for a reduction of a %d-d input", name,
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx,
                     (values == nullptr || values->scalar_type() == self.scalar_type()) &&
                         (indices == nullptr || indices->scalar_type() == ScalarType::Long),
                     InvalidArgument, "%s: values must be %s like self and indices Long", name,
                     scalar_type_name(self.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous(), NotSupported, "%s: self must be contiguous", name);
  EMBER_DISPATCH(ctx, name, Mask, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    extreme_reduce<Max>(plan, self.const_data_ptr<T>(), values ? values->mutable_data_ptr<T>() : nullptr,
                        indices ? indices->mutable_data_ptr<int64_t>() : nullptr);
  });
}

// amax.out (op_select.cc) and amin.out (op_minmax.cc).
template <uint32_t Mask, bool Max>
void amax_amin(KernelContext& ctx, const char* name, const Tensor& self, ArrayRef<int64_t> dim, bool keepdim,
               Tensor& out) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(self, dim.data(), dim.size(), true, keepdim, plan), InvalidArgument,
                     "%s: dims out of range or repeated for a %d-d input", name, static_cast<int>(self.dim()));
  extreme<Mask, Max>(ctx, name, self, plan, &out, nullptr);
}

}  // namespace portable
}  // namespace ember
