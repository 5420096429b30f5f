// Reductions over a list of dims: mean.out and sum.IntList_out (keepdim; an empty or absent dim list reduces all).
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// Marks reduced dims in `reduced`; false for a dim out of range or repeated.
bool reduced_dims(const Tensor& in, Optional<ArrayRef<int64_t>> dims, bool* reduced) {
  const int64_t n = in.dim();
  for (int64_t d = 0; d < n; ++d) reduced[d] = false;
  if (!dims.has_value() || dims.value().empty()) {
    for (int64_t d = 0; d < n; ++d) reduced[d] = true;
    return true;
  }
  for (int64_t d : dims.value()) {
    const int64_t k = d < 0 ? d + n : d;
    if (k < 0 || k >= n || reduced[k]) return false;
    reduced[k] = true;
  }
  return true;
}

template <uint32_t Mask>
void reduce(KernelContext& ctx, const char* name, const Tensor& in, Optional<ArrayRef<int64_t>> dims, bool keepdim,
            bool mean, Tensor& out) {
  bool reduced[kMaxTensorDim];
  EMBER_KERNEL_CHECK(ctx, reduced_dims(in, dims, reduced), InvalidArgument,
                     "%s: dims out of range or repeated for a %d-d input", name, static_cast<int>(in.dim()));
  int32_t shape[kMaxTensorDim];
  size_t rank = 0;
  int64_t inner_count = 1;
  for (int32_t d = 0; d < in.dim(); ++d) {
    if (reduced[d]) {
      inner_count *= in.size(d);
      if (keepdim) shape[rank++] = 1;
    } else {
      shape[rank++] = in.size(d);
    }
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, rank), InvalidArgument, "%s: out has the wrong shape", name);
  EMBER_KERNEL_CHECK(ctx, in.is_contiguous(), NotSupported, "%s: self must be contiguous", name);
  // Computed in out's dtype, which may be wider than self's (ATen sums integers into int64); integers wrap.
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const void* x = in.const_data_ptr();
    const ScalarType xt = in.scalar_type();
    T* o = out.mutable_data_ptr<T>();
    const int64_t total_out = out.numel();
    for (int64_t i = 0; i < total_out; ++i) o[i] = static_cast<T>(C(0));
    const int32_t dim = in.dim();
    // The common case, reduced dims in one run (a global average pool is the last two) and self already in out's
    // dtype: [outer, reduced, inner] with plain strides, not a coordinate walk with a dtype switch per element.
    int32_t first = dim, last = -1;
    for (int32_t d = 0; d < dim; ++d) {
      if (!reduced[d]) continue;
      if (first == dim) first = d;
      last = d;
    }
    bool run = xt == out.scalar_type() && last >= 0;
    for (int32_t d = first; run && d <= last; ++d) run = reduced[d];
    if (run) {
      int64_t inner = 1;
      for (int32_t d = last + 1; d < dim; ++d) inner *= in.size(d);
      const T* xs = static_cast<const T*>(x);
      const int64_t outer = inner == 0 ? 0 : total_out / inner;
      for (int64_t a = 0; a < outer; ++a) {
        const T* src = xs + a * inner_count * inner;
        T* dst = o + a * inner;
        if (inner == 1) {
          C acc = C(0);
          for (int64_t r = 0; r < inner_count; ++r) acc = wrapping_add(acc, static_cast<C>(src[r]));
          dst[0] = static_cast<T>(acc);
          continue;
        }
        for (int64_t r = 0; r < inner_count; ++r) {
          const T* row = src + r * inner;
          for (int64_t i = 0; i < inner; ++i) {
            dst[i] = static_cast<T>(wrapping_add(static_cast<C>(dst[i]), static_cast<C>(row[i])));
          }
        }
      }
    } else {
      // Walk the input once; each element adds into the output position of its kept coordinates.
      int64_t coord[kMaxTensorDim] = {0};
      const int64_t total = in.numel();
      for (int64_t i = 0; i < total; ++i) {
        int64_t oi = 0;
        for (int32_t d = 0; d < dim; ++d) {
          if (!reduced[d]) oi = oi * in.size(d) + coord[d];
        }
        o[oi] = static_cast<T>(wrapping_add(static_cast<C>(o[oi]), load_as<C>(x, xt, i)));
        for (int32_t d = dim - 1; d >= 0; --d) {
          if (++coord[d] < in.size(d)) break;
          coord[d] = 0;
        }
      }
    }
    if (mean && inner_count > 0) {
      for (int64_t i = 0; i < total_out; ++i) o[i] = static_cast<T>(static_cast<C>(o[i]) / static_cast<C>(inner_count));
    }
  });
}

}  // namespace

void mean_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
              Optional<int64_t> dtype, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, !dtype.has_value() || dtype.value() == static_cast<int64_t>(out.scalar_type()),
                     InvalidArgument, "mean.out: dtype argument must match out's dtype");
  reduce<selected_dtypes::mean_out_portable>(ctx, "mean.out", self, dim, keepdim, true, out);
}

void sum_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
             Optional<int64_t> dtype, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, !dtype.has_value() || dtype.value() == static_cast<int64_t>(out.scalar_type()),
                     InvalidArgument, "sum.IntList_out: dtype argument must match out's dtype");
  reduce<selected_dtypes::sum_out_portable>(ctx, "sum.IntList_out", self, dim, keepdim, false, out);
}

}  // namespace portable
}  // namespace ember
