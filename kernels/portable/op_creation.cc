// Creation, fill and alias copies: arange (both overloads), empty, fill (Scalar and Tensor value), full_like, ones,
// zeros, scalar_tensor, and the copies export leaves for lift_fresh, detach and alias.
#include <math.h>
#include <string.h>

#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/fill_util.h"
#include "kernels/portable/util/unary_util.h"

namespace ember {
namespace portable {
namespace {

// PyTorch's accumulation type for arange on CPU: double for Float and Double, float for Half and BFloat16, int64
// for the integer types. Bounds, step and values are computed in it.
template <typename T>
struct ArangeAcc {
  using type = std::conditional_t<std::is_integral<T>::value, int64_t, double>;
};
template <>
struct ArangeAcc<Half> {
  using type = float;
};
template <>
struct ArangeAcc<BFloat16> {
  using type = float;
};

// PyTorch's element count for arange, or the reason it refuses the arguments. The bounds are checked in double on
// the Scalars as given; the count is ceil((end - start) / step) in double, except for a Long out, where it is
// integer arithmetic on the int64 bounds (more precise than double). So an Int out with a step of 0.5 has a
// nonzero step here, and its elements all equal start (the int64 step is 0), exactly as in PyTorch.
struct ArangeCount {
  int64_t count;
  const char* problem;  // null when the range is valid
};

template <typename T>
ArangeCount arange_count(const Scalar& start, const Scalar& end, const Scalar& step) {
  const double ds = start.to_double(), de = end.to_double(), dt = step.to_double();
  if (!(dt > 0 || dt < 0)) return {0, "step must be nonzero"};
  if (!std::isfinite(ds) || !std::isfinite(de)) return {0, "unsupported range (start or end is not finite)"};
  if (!((dt > 0 && de >= ds) || (dt < 0 && de <= ds))) {
    return {0, "upper bound and lower bound inconsistent with step sign"};
  }
  double count;
  if constexpr (std::is_same<T, int64_t>::value) {
    if (!scalar_fits<int64_t>(start) || !scalar_fits<int64_t>(end) || !scalar_fits<int64_t>(step)) {
      return {0, "start, end or step cannot be converted to int64 without overflow"};
    }
    const int64_t xs = start.to<int64_t>(), xe = end.to<int64_t>(), xt = step.to<int64_t>();
    if (xt == 0) return {0, "step must be nonzero (it is 0 as int64)"};
    // (end - start + step - sign(step)) / step, refusing where int64 overflows (PyTorch's would wrap).
    const int64_t sgn = xt > 0 ? 1 : -1;
    int64_t span;
    if (__builtin_sub_overflow(xe, xs, &span) || __builtin_add_overflow(span, xt - sgn, &span) ||
        (span == INT64_MIN && xt == -1)) {
      return {0, "invalid size, possible overflow (int64 arithmetic)"};
    }
    count = static_cast<double>(span / xt);
  } else {
    count = ceil((de - ds) / dt);
  }
  // Ember's tensors count elements in int32: a larger range could never fit out.
  if (!(count >= 0.0 && count <= 2147483647.0)) return {0, "invalid size, possible overflow (over 2^31 elements)"};
  return {static_cast<int64_t>(count), nullptr};
}

template <uint32_t Mask>
void arange_kernel(KernelContext& ctx, const char* name, const Scalar& start, const Scalar& end, const Scalar& step,
                   Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, out.dim() == 1, InvalidArgument, "%s: out must be 1-D, it has rank %d", name,
                     static_cast<int>(out.dim()));
  EMBER_DISPATCH(ctx, name, Mask & kRealTypes, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = typename ArangeAcc<T>::type;
    const ArangeCount r = arange_count<T>(start, end, step);
    EMBER_KERNEL_CHECK(ctx, r.problem == nullptr, InvalidArgument, "%s: %s (start %g, end %g, step %g, out %s)", name,
                       r.problem, start.to_double(), end.to_double(), step.to_double(),
                       scalar_type_name(out.scalar_type()));
    const int64_t count = r.count;
    EMBER_KERNEL_CHECK(ctx, fit_output(out, &count, 1), InvalidArgument,
                       "%s: out has %lld elements, the range %g to %g by %g has %lld", name,
                       static_cast<long long>(out.numel()), start.to_double(), end.to_double(), step.to_double(),
                       static_cast<long long>(count));
    const A xs = start.to<A>(), xt = step.to<A>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_integral<A>::value) {
        o[i] = static_cast<T>(wrapping_add(xs, wrapping_mul(xt, i)));
      } else {
        o[i] = static_cast<T>(xs + xt * static_cast<A>(i));
      }
    }
  });
}

// MemoryFormat codes (exir's emitter): contiguous 0, preserve 1, channels_last 2, channels_last_3d 3. A format
// that names a layout must be out's (the memory plan gave out its dim order); preserve and None take any.
bool memory_format_ok(KernelContext& ctx, const char* name, Optional<int64_t> memory_format, const Tensor& out) {
  if (!memory_format.has_value() || memory_format.value() == 1) return true;
  const int64_t mf = memory_format.value();
  const ArrayRef<uint8_t> order = out.dim_order();
  bool ok = false;
  if (mf == 0) {
    ok = out.is_contiguous();
  } else if (mf == 2 || mf == 3) {
    // channels-last: dim 1 innermost, the others in order.
    const size_t rank = mf == 2 ? 4 : 5;
    ok = order.size() == rank && order[0] == 0 && order[rank - 1] == 1;
    for (size_t i = 1; ok && i + 1 < rank; ++i) ok = order[i] == i + 1;
  }
  if (!ok) {
    EMBER_LOG(ERROR, "%s: memory_format %lld does not match out's dim order (rank %d)", name,
              static_cast<long long>(mf), static_cast<int>(out.dim()));
    ctx.fail(Error::InvalidArgument);
  }
  return ok;
}

// lift_fresh_copy, detach_copy and alias_copy: out is a copy of self (same dtype, shape and dim order).
void plain_copy(KernelContext& ctx, const char* name, uint32_t mask, const Tensor& self, Tensor& out) {
  if (!unary_checks(ctx, name, self, mask, true, out)) return;
  if (out.mutable_data_ptr() != self.const_data_ptr())
    memmove(out.mutable_data_ptr(), self.const_data_ptr(), self.nbytes());
}

}  // namespace

void arange_out(KernelContext& ctx, const Scalar& end, Tensor& out) {
  arange_kernel<selected_dtypes::arange_out_portable>(ctx, "arange.out", Scalar(int64_t{0}), end, Scalar(int64_t{1}),
                                                      out);
}

void arange_start_out(KernelContext& ctx, const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  arange_kernel<selected_dtypes::arange_start_out_portable>(ctx, "arange.start_out", start, end, step, out);
}

void empty_out(KernelContext& ctx, ArrayRef<int64_t> size, Optional<int64_t> memory_format, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "empty.out: out (rank %d) cannot take the requested shape of rank %zu",
                     static_cast<int>(out.dim()), size.size());
  // The contents are unspecified, as in PyTorch: nothing is written.
  (void)memory_format_ok(ctx, "empty.out", memory_format, out);
}

void fill_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& value, Tensor& out) {
  constexpr uint32_t kMask = selected_dtypes::fill_scalar_out_portable & kRealAndBoolTypes;
  if (!unary_checks(ctx, "fill.Scalar_out", self, kMask, true, out)) return;
  fill_with<kMask>(ctx, "fill.Scalar_out", value, out);
}

void fill_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& value, Tensor& out) {
  constexpr uint32_t kMask = selected_dtypes::fill_tensor_out_portable & kRealAndBoolTypes;
  EMBER_KERNEL_CHECK(ctx, value.dim() == 0, InvalidArgument,
                     "fill.Tensor_out: value must be a 0-dim tensor, it has %d dimensions",
                     static_cast<int>(value.dim()));
  EMBER_KERNEL_CHECK(ctx, (kLoadableTypes >> static_cast<int>(value.scalar_type())) & 1u, InvalidArgument,
                     "fill.Tensor_out: value's dtype %s is not supported", scalar_type_name(value.scalar_type()));
  if (!unary_checks(ctx, "fill.Tensor_out", self, kMask, true, out)) return;
  // The value as the Scalar PyTorch's item() gives: a double, an int64 or a bool by value's dtype.
  Scalar v;
  if (is_floating(value.scalar_type())) {
    double d;
    load_block<double>(value, 0, 1, &d);
    v = Scalar(d);
  } else if (value.scalar_type() == ScalarType::Bool) {
    v = Scalar(static_cast<bool>(*value.const_data_ptr<Bool8>()));
  } else {
    v = Scalar(load_as<int64_t>(value.const_data_ptr(), value.scalar_type(), 0));
  }
  fill_with<kMask>(ctx, "fill.Tensor_out", v, out);
}

void full_like_out(KernelContext& ctx, const Tensor& self, const Scalar& fill_value, Optional<int64_t> memory_format,
                   Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument,
                     "full_like.out: out (rank %d) cannot take self's shape (rank %d)", static_cast<int>(out.dim()),
                     static_cast<int>(self.dim()));
  if (!memory_format_ok(ctx, "full_like.out", memory_format, out)) return;
  fill_with<selected_dtypes::full_like_out_portable & kRealAndBoolTypes>(ctx, "full_like.out", fill_value, out);
}

void ones_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "ones.out: out (rank %d) cannot take the requested shape of rank %zu", static_cast<int>(out.dim()),
                     size.size());
  fill_with<selected_dtypes::ones_out_portable & kRealAndBoolTypes>(ctx, "ones.out", Scalar(int64_t{1}), out);
}

void zeros_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "zeros.out: out (rank %d) cannot take the requested shape of rank %zu",
                     static_cast<int>(out.dim()), size.size());
  // All-zero bytes are 0 (and +0.0) in every dtype: no dispatch needed.
  memset(out.mutable_data_ptr(), 0, out.nbytes());
}

void scalar_tensor_out(KernelContext& ctx, const Scalar& s, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, static_cast<const int32_t*>(nullptr), 0), InvalidArgument,
                     "scalar_tensor.out: out must be 0-dim, it has rank %d", static_cast<int>(out.dim()));
  fill_with<selected_dtypes::scalar_tensor_out_portable & kRealAndBoolTypes>(ctx, "scalar_tensor.out", s, out);
}

void lift_fresh_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  plain_copy(ctx, "lift_fresh_copy.out", selected_dtypes::lift_fresh_copy_out_portable, self, out);
}
void detach_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  plain_copy(ctx, "detach_copy.out", selected_dtypes::detach_copy_out_portable, self, out);
}
void alias_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  plain_copy(ctx, "alias_copy.out", selected_dtypes::alias_copy_out_portable, self, out);
}

}  // namespace portable
}  // namespace ember
