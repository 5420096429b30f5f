// topk.values: the k largest (or smallest) elements along a dim and their indices, in order. NaN ranks above
// every number (first when largest, last when smallest), as in ATen on CPU; equal values come in index order
// (ATen leaves their order unspecified). sorted=False returns them sorted too, which ATen allows.
#include <algorithm>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/reduce_util.h"

namespace ember {
namespace portable {
namespace {

// Whether element a of a slice ranks ahead of element b: a strict total order (ties by index).
template <typename C>
struct Ahead {
  bool largest;
  bool operator()(C va, int64_t a, C vb, int64_t b) const {
    const bool na = va != va, nb = vb != vb;
    if (na != nb) return largest ? na : nb;
    if (!na && va != vb) return largest ? va > vb : va < vb;
    return a < b;
  }
};

}  // namespace

// Scratch for one slice's order (the dim's length in int64s), planned so every call can sort.
KernelMemory topk_memory(const KernelArgs& args) {
  const ArrayRef<int32_t> sizes = args.sizes(0);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t d = args.to_int(2);
  d = d < 0 ? d + rank : d;
  KernelMemory m;
  if (rank == 0) m.scratch = sizeof(int64_t);
  if (d >= 0 && d < rank) m.scratch = static_cast<size_t>(sizes[static_cast<size_t>(d)]) * sizeof(int64_t);
  return m;
}

void topk_values_out(KernelContext& ctx, const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                     Tensor& values, Tensor& indices) {
  (void)sorted;
  const int64_t d = wrap_dim(dim, self.dim());
  EMBER_KERNEL_CHECK(ctx, d >= 0, InvalidArgument, "topk.values: dim %lld out of range for a %d-d input",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  const int64_t n = self.dim() == 0 ? 1 : self.size(static_cast<int32_t>(d));
  EMBER_KERNEL_CHECK(ctx, k >= 0 && k <= n, InvalidArgument, "topk.values: k %lld out of range for a dim of %lld",
                     static_cast<long long>(k), static_cast<long long>(n));
  int32_t shape[kMaxTensorDim];
  for (int32_t i = 0; i < self.dim(); ++i) shape[i] = i == d ? static_cast<int32_t>(k) : self.size(i);
  const size_t rank = static_cast<size_t>(self.dim());
  EMBER_KERNEL_CHECK(ctx, fit_output(values, shape, rank) && fit_output(indices, shape, rank), InvalidArgument,
                     "topk.values: values and indices must have self's shape with %lld along dim %lld",
                     static_cast<long long>(k), static_cast<long long>(d));
  EMBER_KERNEL_CHECK(ctx,
                     values.scalar_type() == self.scalar_type() && indices.scalar_type() == ScalarType::Long &&
                         self.scalar_type() != ScalarType::Bool,
                     InvalidArgument, "topk.values: self must not be Bool, values must be %s like self, indices Long",
                     scalar_type_name(self.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous(), NotSupported, "topk.values: self must be contiguous");
  // k = 0 or an empty self: nothing to write, though the other dims may claim billions of slices to walk.
  if (values.numel() == 0) return;
  // The same walk over self's slices and the outputs' (which differ only along dim).
  ReducePlan in_plan, out_plan;
  make_reduce_plan(self, &d, 1, true, true, in_plan);
  make_reduce_plan(values, &d, 1, true, true, out_plan);
  const int64_t in_step = in_plan.nreduced ? in_plan.reduced_strides[0] : 0;
  const int64_t out_step = out_plan.nreduced ? out_plan.reduced_strides[0] : 0;
  // A slice's order, sorted in the planned scratch (topk_memory); called without it (a kernel test), k selection
  // passes over the slice instead.
  int64_t* order = n > 0 && ctx.scratch().size() >= static_cast<size_t>(n) * sizeof(int64_t)
                       ? reinterpret_cast<int64_t*>(ctx.scratch().data())
                       : nullptr;
  EMBER_DISPATCH(ctx, "topk.values", selected_dtypes::topk_values_out_portable, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const Ahead<C> ahead{largest};
    const T* x = self.const_data_ptr<T>();
    T* vo = values.mutable_data_ptr<T>();
    int64_t* io = indices.mutable_data_ptr<int64_t>();
    for (int64_t s = 0; s < in_plan.out_numel; ++s) {
      const T* row = x + in_plan.base(s);
      const int64_t ob = out_plan.base(s);
      auto at = [&](int64_t i) { return static_cast<C>(row[i * in_step]); };
      if (order) {
        for (int64_t i = 0; i < n; ++i) order[i] = i;
        std::partial_sort(order, order + k, order + n, [&](int64_t a, int64_t b) { return ahead(at(a), a, at(b), b); });
        for (int64_t j = 0; j < k; ++j) {
          vo[ob + j * out_step] = row[order[j] * in_step];
          io[ob + j * out_step] = order[j];
        }
        continue;
      }
      int64_t prev = -1;
      for (int64_t j = 0; j < k; ++j) {
        // The first element ranked after the previous pick.
        int64_t best = -1;
        for (int64_t i = 0; i < n; ++i) {
          if (prev >= 0 && !ahead(at(prev), prev, at(i), i)) continue;
          if (best < 0 || ahead(at(i), i, at(best), best)) best = i;
        }
        vo[ob + j * out_step] = row[best * in_step];
        io[ob + j * out_step] = best;
        prev = best;
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
