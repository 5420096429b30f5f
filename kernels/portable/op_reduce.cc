// Accumulating reductions over a list of dims (keepdim; an empty or absent dim list reduces all): sum.IntList_out,
// mean.out, mean.dtype_out, prod.out, prod.int_out; any (all, dims, dim); cumsum along one dim.
#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/reduce_util.h"

namespace ember {
namespace portable {
namespace {

enum class Acc { Sum, Mean, Prod };

// Element `off` of `in` as C: direct when self is already T (the common case), else through load_as.
template <typename T, typename C>
C load_elem(const void* x, ScalarType xt, bool same, int64_t off) {
  return same ? static_cast<C>(static_cast<const T*>(x)[off]) : load_as<C>(x, xt, off);
}

// Computed in out's dtype (compute_t: float for Half/BFloat16), which may be wider than self's (ATen sums and
// multiplies integers into int64); integers wrap.
template <uint32_t Mask>
void accumulate(KernelContext& ctx, const char* name, const Tensor& in, const ReducePlan& plan, Acc acc, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, plan.out_shape, plan.out_rank), InvalidArgument,
                     "%s: out has the wrong shape for a reduction of a %d-d input", name, static_cast<int>(in.dim()));
  EMBER_KERNEL_CHECK(ctx, in.is_contiguous(), NotSupported, "%s: self must be contiguous", name);
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const void* x = in.const_data_ptr();
    const ScalarType xt = in.scalar_type();
    const bool same = xt == out.scalar_type();
    T* o = out.mutable_data_ptr<T>();
    const int64_t total_out = plan.out_numel;
    // The common sum/mean case, reduced dims in one run (a global average pool is the last two) and self already in
    // out's dtype: [outer, reduced, inner] with plain strides, rows added in place.
    bool run = acc != Acc::Prod && same && plan.nreduced > 0;
    for (int32_t k = 0; run && k + 1 < plan.nreduced; ++k) {
      run = plan.reduced_strides[k] == plan.reduced_strides[k + 1] * plan.reduced_sizes[k + 1];
    }
    if (run) {
      const int64_t inner = plan.reduced_strides[plan.nreduced - 1];
      const T* xs = static_cast<const T*>(x);
      const int64_t outer = inner == 0 ? 0 : total_out / inner;
      for (int64_t i = 0; i < total_out; ++i) o[i] = static_cast<T>(C(0));
      for (int64_t a = 0; a < outer; ++a) {
        const T* src = xs + a * plan.reduced_numel * inner;
        T* dst = o + a * inner;
        if (inner == 1) {
          C sum = C(0);
          for (int64_t r = 0; r < plan.reduced_numel; ++r) sum = wrapping_add(sum, static_cast<C>(src[r]));
          dst[0] = static_cast<T>(sum);
          continue;
        }
        for (int64_t r = 0; r < plan.reduced_numel; ++r) {
          const T* row = src + r * inner;
          for (int64_t i = 0; i < inner; ++i) {
            dst[i] = static_cast<T>(wrapping_add(static_cast<C>(dst[i]), static_cast<C>(row[i])));
          }
        }
      }
    } else {
      for (int64_t i = 0; i < total_out; ++i) {
        C a = acc == Acc::Prod ? C(1) : C(0);
        plan.walk(i, [&](int64_t, int64_t off) {
          const C v = load_elem<T, C>(x, xt, same, off);
          a = acc == Acc::Prod ? wrapping_mul(a, v) : wrapping_add(a, v);
        });
        o[i] = static_cast<T>(a);
      }
    }
    // ATen's mean of nothing is 0/0 (NaN); an integer division by zero is never made.
    if (acc == Acc::Mean && (plan.reduced_numel > 0 || !std::is_integral<C>::value)) {
      for (int64_t i = 0; i < total_out; ++i) {
        o[i] = static_cast<T>(static_cast<C>(o[i]) / static_cast<C>(plan.reduced_numel));
      }
    }
  });
}

template <uint32_t Mask>
void reduce_dims(KernelContext& ctx, const char* name, const Tensor& in, Optional<ArrayRef<int64_t>> dims, bool keepdim,
                 Optional<int64_t> dtype, Acc acc, Tensor& out) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(in, dims, keepdim, plan), InvalidArgument,
                     "%s: dims out of range or repeated for a %d-d input", name, static_cast<int>(in.dim()));
  EMBER_KERNEL_CHECK(ctx, !dtype.has_value() || dtype.value() == static_cast<int64_t>(out.scalar_type()),
                     InvalidArgument, "%s: dtype argument %lld does not match out's dtype %s", name,
                     static_cast<long long>(dtype.has_value() ? dtype.value() : -1),
                     scalar_type_name(out.scalar_type()));
  accumulate<Mask>(ctx, name, in, plan, acc, out);
}

// any over a plan: out is Bool (or Byte, ATen's result for a Byte input); NaN counts as true.
void any_plan(KernelContext& ctx, const char* name, const Tensor& in, const ReducePlan& plan, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, plan.out_shape, plan.out_rank), InvalidArgument,
                     "%s: out has the wrong shape for a reduction of a %d-d input", name, static_cast<int>(in.dim()));
  const ScalarType ot = out.scalar_type();
  EMBER_KERNEL_CHECK(ctx, ot == ScalarType::Bool || ot == ScalarType::Byte, InvalidArgument,
                     "%s: out must be Bool or Byte, not %s", name, scalar_type_name(ot));
  EMBER_KERNEL_CHECK(ctx, in.is_contiguous(), NotSupported, "%s: self must be contiguous", name);
  const void* x = in.const_data_ptr();
  const ScalarType xt = in.scalar_type();
  for (int64_t i = 0; i < plan.out_numel; ++i) {
    bool any = false;
    plan.walk(i, [&](int64_t, int64_t off) { any = any || load_as<double>(x, xt, off) != 0.0; });
    if (ot == ScalarType::Bool) {
      out.mutable_data_ptr<bool>()[i] = any;
    } else {
      out.mutable_data_ptr<uint8_t>()[i] = any ? 1 : 0;
    }
  }
}

}  // namespace

void mean_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
              Optional<int64_t> dtype, Tensor& out) {
  reduce_dims<selected_dtypes::mean_out_portable>(ctx, "mean.out", self, dim, keepdim, dtype, Acc::Mean, out);
}

void sum_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
             Optional<int64_t> dtype, Tensor& out) {
  reduce_dims<selected_dtypes::sum_out_portable>(ctx, "sum.IntList_out", self, dim, keepdim, dtype, Acc::Sum, out);
}

// --- reductions family (issue 15) ---------------------------------------------------------------------------------

void mean_dtype_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dtype, Tensor& out) {
  reduce_dims<selected_dtypes::mean_dtype_out_portable>(ctx, "mean.dtype_out", self, Optional<ArrayRef<int64_t>>(),
                                                        false, dtype, Acc::Mean, out);
}

void prod_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dtype, Tensor& out) {
  reduce_dims<selected_dtypes::prod_out_portable>(ctx, "prod.out", self, Optional<ArrayRef<int64_t>>(), false, dtype,
                                                  Acc::Prod, out);
}

void prod_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Optional<int64_t> dtype,
                  Tensor& out) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(self, &dim, 1, true, keepdim, plan), InvalidArgument,
                     "prod.int_out: dim %lld out of range for a %d-d input", static_cast<long long>(dim),
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, !dtype.has_value() || dtype.value() == static_cast<int64_t>(out.scalar_type()),
                     InvalidArgument, "prod.int_out: dtype argument does not match out's dtype %s",
                     scalar_type_name(out.scalar_type()));
  accumulate<selected_dtypes::prod_int_out_portable>(ctx, "prod.int_out", self, plan, Acc::Prod, out);
}

void any_all_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  ReducePlan plan;
  make_reduce_plan(self, nullptr, 0, true, false, plan);  // no dims: cannot fail
  any_plan(ctx, "any.all_out", self, plan, out);
}

void any_dims_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim, Tensor& out) {
  ReducePlan plan;
  // None reduces everything; an empty list nothing (ATen's any.dims).
  const bool ok = dim.has_value() ? make_reduce_plan(self, dim.value().data(), dim.value().size(), false, keepdim, plan)
                                  : make_reduce_plan(self, nullptr, 0, true, keepdim, plan);
  EMBER_KERNEL_CHECK(ctx, ok, InvalidArgument, "any.dims_out: dims out of range or repeated for a %d-d input",
                     static_cast<int>(self.dim()));
  any_plan(ctx, "any.dims_out", self, plan, out);
}

void any_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& out) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(self, &dim, 1, false, keepdim, plan), InvalidArgument,
                     "any.out: dim %lld out of range for a %d-d input", static_cast<long long>(dim),
                     static_cast<int>(self.dim()));
  any_plan(ctx, "any.out", self, plan, out);
}

void cumsum_out(KernelContext& ctx, const Tensor& self, int64_t dim, Optional<int64_t> dtype, Tensor& out) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(self, &dim, 1, false, false, plan), InvalidArgument,
                     "cumsum.out: dim %lld out of range for a %d-d input", static_cast<long long>(dim),
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument, "cumsum.out: out must have self's shape");
  EMBER_KERNEL_CHECK(ctx, !dtype.has_value() || dtype.value() == static_cast<int64_t>(out.scalar_type()),
                     InvalidArgument, "cumsum.out: dtype argument does not match out's dtype %s",
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous(), NotSupported, "cumsum.out: self must be contiguous");
  // Nothing to write; and the walk below would still visit every slice of the other dims, which an empty tensor may
  // claim billions of (kernel_fuzz: a [0, 2^31, ...] input ran past libFuzzer's 25-second limit).
  if (self.numel() == 0) return;
  EMBER_DISPATCH(ctx, "cumsum.out", selected_dtypes::cumsum_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const void* x = self.const_data_ptr();
    const ScalarType xt = self.scalar_type();
    const bool same = xt == out.scalar_type();
    T* o = out.mutable_data_ptr<T>();
    // out has self's shape, so an input offset is also the output's; the running sum stays in C between steps.
    for (int64_t i = 0; i < plan.out_numel; ++i) {
      C a = C(0);
      plan.walk(i, [&](int64_t, int64_t off) {
        a = wrapping_add(a, load_elem<T, C>(x, xt, same, off));
        o[off] = static_cast<T>(a);
      });
    }
  });
}

}  // namespace portable
}  // namespace ember
