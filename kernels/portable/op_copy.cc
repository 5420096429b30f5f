// Data movement: copy_, clone, the *_copy view ops (view, squeeze, unsqueeze, permute, expand, slice, select) and
// full. Views that only re-index are one strided gather over bytes, so they need no dtype dispatch: every dtype
// costs the same (zero) code.
// Every kernel copies tensor bytes with memmove, never memcpy: a hostile program can plan a call's output over
// part of its input, and memcpy over overlapping bytes is undefined (tools/fuzz.sh long: slice_copy at 7749dd9).
// The result is then garbage, but every access stays inside the planned bytes.
#include <string.h>

#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// Elements [0, n) of a row at stride `stride` (in elements), as T, into contiguous out. Fixed-size memcpy: no
// alignment assumed, and the compiler emits a plain load and store.
template <class T>
void gather_row(uint8_t* out, const uint8_t* in, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    memcpy(&v, in + i * stride * static_cast<int64_t>(sizeof(T)), sizeof(T));
    memcpy(out + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }
}

// out (contiguous, `rank` dims of `sizes`) [i] = in_bytes + offset + sum(coord[d] * strides[d]) elements.
// Size-1 dims are dropped and dims that are contiguous with the next are merged, so a permute of attention heads
// or a slice is a few rows: each one memcpy at unit stride, else a typed loop (a transformer block spent a third
// of its time here when every element was its own index computation and memcpy call).
void strided_gather(uint8_t* out, const uint8_t* in, size_t elem, const int64_t* sizes, const int64_t* strides,
                    int rank, int64_t offset) {
  int64_t sz[kMaxTensorDim], st[kMaxTensorDim];
  int r = 0;
  for (int d = 0; d < rank; ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] == 1) continue;
    if (r > 0 && st[r - 1] == strides[d] * sizes[d]) {
      sz[r - 1] *= sizes[d];
      st[r - 1] = strides[d];
    } else {
      sz[r] = sizes[d], st[r] = strides[d], ++r;
    }
  }
  const int64_t e = static_cast<int64_t>(elem);
  if (r == 0) {
    memmove(out, in + offset * e, elem);
    return;
  }
  const int64_t inner = sz[r - 1], istride = st[r - 1];
  int64_t rows = 1;
  for (int d = 0; d < r - 1; ++d) rows *= sz[d];
  int64_t coord[kMaxTensorDim] = {0};
  int64_t src = offset;
  for (int64_t row = 0; row < rows; ++row) {
    const uint8_t* s = in + src * e;
    uint8_t* o = out + row * inner * e;
    if (istride == 1) {
      memmove(o, s, static_cast<size_t>(inner * e));
    } else if (elem == 4) {
      gather_row<uint32_t>(o, s, inner, istride);
    } else if (elem == 2) {
      gather_row<uint16_t>(o, s, inner, istride);
    } else if (elem == 8) {
      gather_row<uint64_t>(o, s, inner, istride);
    } else if (elem == 1) {
      gather_row<uint8_t>(o, s, inner, istride);
    } else {
      for (int64_t i = 0; i < inner; ++i) memmove(o + i * e, s + i * istride * e, elem);
    }
    // The next row: the outer coordinates as an odometer, the source offset kept in step.
    for (int d = r - 2; d >= 0; --d) {
      src += st[d];
      if (++coord[d] < sz[d]) break;
      src -= st[d] * sz[d];
      coord[d] = 0;
    }
  }
}

int64_t wrap_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

bool bytes_copy_fits(KernelContext& ctx, const char* name, const Tensor& in, Tensor& out) {
  if (in.scalar_type() != out.scalar_type() || in.numel() != out.numel()) {
    EMBER_LOG(ERROR, "%s: out (%s, %lld elements) cannot hold self (%s, %lld elements)", name,
              scalar_type_name(out.scalar_type()), static_cast<long long>(out.numel()),
              scalar_type_name(in.scalar_type()), static_cast<long long>(in.numel()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  return true;
}

bool bytes_copy(KernelContext& ctx, const char* name, const Tensor& in, Tensor& out) {
  if (!bytes_copy_fits(ctx, name, in, out)) return false;
  // memmove: the planner may alias out with self.
  if (out.mutable_data_ptr() != in.const_data_ptr()) memmove(out.mutable_data_ptr(), in.const_data_ptr(), in.nbytes());
  return true;
}

// Self's sizes and strides listed in out's dim order: walked in row-major order they visit self's elements in out's
// memory order, which relays a tensor out (channels-last <-> contiguous) when the two dim orders differ.
void in_out_order(const Tensor& self, const Tensor& out, int64_t* sizes, int64_t* strides) {
  const ArrayRef<uint8_t> order = out.dim_order();
  for (size_t i = 0; i < order.size(); ++i) {
    sizes[i] = self.size(order[i]);
    strides[i] = self.strides()[order[i]];
  }
}

// self into out (same shape and dtype) in out's dim order: bytes as they are when the orders match, else one
// strided gather.
bool relayout_copy(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out) {
  if (self.dim_order().equals(out.dim_order())) return bytes_copy(ctx, name, self, out);
  if (!bytes_copy_fits(ctx, name, self, out)) return false;
  int64_t sizes[kMaxTensorDim], strides[kMaxTensorDim];
  in_out_order(self, out, sizes, strides);
  strided_gather(static_cast<uint8_t*>(out.mutable_data_ptr()), static_cast<const uint8_t*>(self.const_data_ptr()),
                 self.element_size(), sizes, strides, self.dim(), 0);
  return true;
}

// Self's elements in out's memory order: an odometer over self's strides listed in out's dim order. Out of line,
// so the per-dtype copies below share it.
struct OrderWalk {
  int64_t sizes[kMaxTensorDim], strides[kMaxTensorDim], coord[kMaxTensorDim];
  int rank;
  int64_t off;
};

void walk_start(const Tensor& self, const Tensor& out, OrderWalk& w) {
  in_out_order(self, out, w.sizes, w.strides);
  w.rank = self.dim();
  w.off = 0;
  for (int d = 0; d < w.rank; ++d) w.coord[d] = 0;
}

__attribute__((noinline)) void walk_step(OrderWalk& w) {
  for (int d = w.rank - 1; d >= 0; --d) {
    w.off += w.strides[d];
    if (++w.coord[d] < w.sizes[d]) return;
    w.off -= w.strides[d] * w.sizes[d];
    w.coord[d] = 0;
  }
}

// self converted element by element into out's dtype (same shape), in out's dim order.
template <uint32_t Mask>
void convert_copy(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument, "%s: out must have self's shape", name);
  const bool same_order = self.dim_order().equals(out.dim_order());
  OrderWalk w;
  if (!same_order) walk_start(self, out, w);
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i] = static_cast<T>(load_as<C>(self.const_data_ptr(), self.scalar_type(), same_order ? i : w.off));
      if (!same_order) walk_step(w);
    }
  });
}

}  // namespace

void copy_(KernelContext& ctx, Tensor& self, const Tensor& src, bool non_blocking) {
  (void)non_blocking;
  int32_t shape[kMaxTensorDim];
  const int n = broadcast_shape(self.sizes(), src.sizes(), shape);
  EMBER_KERNEL_CHECK(ctx, n == self.dim() && ArrayRef<int32_t>(shape, static_cast<size_t>(n)).equals(self.sizes()),
                     InvalidArgument, "copy_: src does not broadcast to self's shape");
  if (src.scalar_type() == self.scalar_type() && src.numel() == self.numel()) {
    if (self.mutable_data_ptr() != src.const_data_ptr())
      memmove(self.mutable_data_ptr(), src.const_data_ptr(), src.nbytes());
    return;
  }
  EMBER_DISPATCH(ctx, "copy_", selected_dtypes::copy__portable, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = self.mutable_data_ptr<T>();
    const BroadcastIndexer is(src.sizes(), shape, n);
    for (int64_t i = 0; i < self.numel(); ++i)
      o[i] = static_cast<T>(load_as<C>(src.const_data_ptr(), src.scalar_type(), is(i)));
  });
}

// out's dim order is the memory format asked for (exir plans it so): a clone into another one relays self out.
void clone_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> memory_format, Tensor& out) {
  (void)memory_format;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument, "clone.out: out must have self's shape");
  relayout_copy(ctx, "clone.out", self, out);
}

// ExecuTorch's dim-order-aware clone and conversion (its programs use them where ATen has clone and _to_copy).
void clone_dim_order_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                         Optional<ArrayRef<int64_t>> dim_order, Tensor& out) {
  (void)non_blocking;
  (void)dim_order;  // out's own dim order is the one requested
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument,
                     "_clone_dim_order.out: out must have self's shape");
  relayout_copy(ctx, "_clone_dim_order.out", self, out);
}

void to_dim_order_copy_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                           Optional<ArrayRef<int64_t>> dim_order, Tensor& out) {
  (void)non_blocking;
  (void)dim_order;  // out's own dim order is the one requested
  convert_copy<selected_dtypes::to_dim_order_copy_out_portable>(ctx, "_to_dim_order_copy.out", self, out);
}

void to_copy_out(KernelContext& ctx, const Tensor& self, bool non_blocking, Optional<int64_t> memory_format,
                 Tensor& out) {
  (void)non_blocking;
  (void)memory_format;
  convert_copy<selected_dtypes::to_copy_out_portable>(ctx, "_to_copy.out", self, out);
}

void view_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> size, Tensor& out) {
  int64_t shape[kMaxTensorDim];
  int64_t known = 1, infer = -1;
  EMBER_KERNEL_CHECK(ctx, size.size() <= static_cast<size_t>(kMaxTensorDim), InvalidArgument,
                     "view_copy.out: too many dims");
  for (size_t i = 0; i < size.size(); ++i) {
    shape[i] = size[i];
    if (size[i] == -1) {
      EMBER_KERNEL_CHECK(ctx, infer < 0, InvalidArgument, "view_copy.out: only one dim may be -1");
      infer = static_cast<int64_t>(i);
    } else {
      // Sizes beyond int32 can never match a tensor's; checked here so the product cannot overflow either.
      EMBER_KERNEL_CHECK(ctx, size[i] >= 0 && size[i] <= INT32_MAX, InvalidArgument,
                         "view_copy.out: size %lld of dim %zu is not in [-1, 2^31)", static_cast<long long>(size[i]),
                         i);
      EMBER_KERNEL_CHECK(ctx, !__builtin_mul_overflow(known, size[i], &known), InvalidArgument,
                         "view_copy.out: the sizes' product overflows int64");
    }
  }
  if (infer >= 0) shape[infer] = known ? self.numel() / known : 0;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, size.size()), InvalidArgument,
                     "view_copy.out: out has the wrong shape");
  bytes_copy(ctx, "view_copy.out", self, out);
}

// The squeezes and unsqueeze move no bytes, but out's shape is computed from self's: with bounded dynamic
// shapes self is smaller than planned and out must follow it.
void squeeze_copy_dims_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dims, Tensor& out) {
  const int rank = self.dim();
  uint32_t drop = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], rank == 0 ? 1 : rank);
    EMBER_KERNEL_CHECK(ctx, d >= 0 && d < (rank == 0 ? 1 : rank), InvalidArgument,
                       "squeeze_copy.dims_out: dim %lld is out of range for a %d-d tensor",
                       static_cast<long long>(dims[i]), rank);
    if (rank > 0 && self.size(static_cast<int32_t>(d)) == 1) drop |= 1u << d;
  }
  int64_t sizes[kMaxTensorDim];
  int r = 0;
  for (int i = 0; i < rank; ++i) {
    if (!(drop >> i & 1u)) sizes[r++] = self.size(i);
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(r)), InvalidArgument,
                     "squeeze_copy.dims_out: out must have %d dimensions of self's sizes", r);
  bytes_copy(ctx, "squeeze_copy.dims_out", self, out);
}

void unsqueeze_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  const int rank = self.dim();
  const int64_t d = wrap_dim(dim, rank + 1);
  EMBER_KERNEL_CHECK(ctx, d >= 0 && d <= rank && rank < kMaxTensorDim, InvalidArgument,
                     "unsqueeze_copy.out: dim %lld out of range", static_cast<long long>(dim));
  int64_t sizes[kMaxTensorDim];
  for (int i = 0, k = 0; i <= rank; ++i) sizes[i] = i == d ? 1 : self.size(k++);
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(rank + 1)), InvalidArgument,
                     "unsqueeze_copy.out: out must be self's shape with a 1 at dim %lld", static_cast<long long>(d));
  bytes_copy(ctx, "unsqueeze_copy.out", self, out);
}

void permute_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dims, Tensor& out) {
  const int rank = self.dim();
  EMBER_KERNEL_CHECK(ctx, static_cast<int>(dims.size()) == rank, InvalidArgument,
                     "permute_copy.out: %zu dims for a %d-d tensor", dims.size(), rank);
  int64_t sizes[kMaxTensorDim], strides[kMaxTensorDim];
  uint32_t seen = 0;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = wrap_dim(dims[static_cast<size_t>(i)], rank);
    EMBER_KERNEL_CHECK(ctx, d >= 0 && d < rank && !(seen >> d & 1u), InvalidArgument,
                       "permute_copy.out: dims are not a permutation");
    seen |= 1u << d;
    sizes[i] = self.size(static_cast<int32_t>(d));
    strides[i] = self.strides()[static_cast<size_t>(d)];
  }
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(out, sizes, static_cast<size_t>(rank)) && out.scalar_type() == self.scalar_type() &&
                         out.is_contiguous(),
                     InvalidArgument, "permute_copy.out: out has the wrong shape or dtype");
  strided_gather(static_cast<uint8_t*>(out.mutable_data_ptr()), static_cast<const uint8_t*>(self.const_data_ptr()),
                 self.element_size(), sizes, strides, rank, 0);
}

void expand_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> size, bool implicit, Tensor& out) {
  (void)implicit;
  const int rank = static_cast<int>(size.size());
  const int lead = rank - self.dim();
  EMBER_KERNEL_CHECK(ctx, lead >= 0 && rank <= kMaxTensorDim, InvalidArgument,
                     "expand_copy.out: cannot expand a %d-d tensor to %d dims", static_cast<int>(self.dim()), rank);
  int64_t sizes[kMaxTensorDim], strides[kMaxTensorDim];
  for (int i = 0; i < rank; ++i) {
    const int k = i - lead;
    const int64_t in_size = k >= 0 ? self.size(k) : 1;
    sizes[i] = size[static_cast<size_t>(i)] == -1 ? in_size : size[static_cast<size_t>(i)];
    EMBER_KERNEL_CHECK(ctx, k >= 0 ? (in_size == sizes[i] || in_size == 1) : size[static_cast<size_t>(i)] >= 0,
                       InvalidArgument, "expand_copy.out: dim %d of size %lld cannot expand to %lld", i,
                       static_cast<long long>(in_size), static_cast<long long>(sizes[i]));
    strides[i] = (k < 0 || in_size == 1) ? 0 : self.strides()[static_cast<size_t>(k)];
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(rank)) && out.scalar_type() == self.scalar_type(),
                     InvalidArgument, "expand_copy.out: out has the wrong shape or dtype");
  strided_gather(static_cast<uint8_t*>(out.mutable_data_ptr()), static_cast<const uint8_t*>(self.const_data_ptr()),
                 self.element_size(), sizes, strides, rank, 0);
}

void slice_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, Optional<int64_t> start, Optional<int64_t> end,
                    int64_t step, Tensor& out) {
  const int rank = self.dim();
  const int64_t d = wrap_dim(dim, rank);
  EMBER_KERNEL_CHECK(ctx, d >= 0 && d < rank && step > 0, InvalidArgument,
                     "slice_copy.Tensor_out: dim %lld or step %lld invalid", static_cast<long long>(dim),
                     static_cast<long long>(step));
  const int64_t len = self.size(static_cast<int32_t>(d));
  auto clamp = [len](int64_t v) { return v < 0 ? (v + len < 0 ? 0 : v + len) : (v > len ? len : v); };
  const int64_t s = clamp(start.value_or(0)), e = clamp(end.value_or(len));
  // A step past the dim's length takes one element at most, like a step of exactly the length (or of 1 when the
  // dim is empty and nothing is taken): capping it keeps the count and the stride product below from overflowing.
  const int64_t st = step > len ? (len > 0 ? len : 1) : step;
  const int64_t count = e > s ? (e - s - 1) / st + 1 : 0;
  int64_t sizes[kMaxTensorDim], strides[kMaxTensorDim];
  for (int i = 0; i < rank; ++i) {
    sizes[i] = i == d ? count : self.size(i);
    strides[i] = self.strides()[static_cast<size_t>(i)] * (i == d ? st : 1);
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(rank)) && out.scalar_type() == self.scalar_type(),
                     InvalidArgument, "slice_copy.Tensor_out: out has the wrong shape or dtype");
  strided_gather(static_cast<uint8_t*>(out.mutable_data_ptr()), static_cast<const uint8_t*>(self.const_data_ptr()),
                 self.element_size(), sizes, strides, rank, s * self.strides()[static_cast<size_t>(d)]);
}

void select_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t index, Tensor& out) {
  const int rank = self.dim();
  const int64_t d = wrap_dim(dim, rank);
  EMBER_KERNEL_CHECK(ctx, d >= 0 && d < rank, InvalidArgument, "select_copy.int_out: dim %lld out of range",
                     static_cast<long long>(dim));
  const int64_t len = self.size(static_cast<int32_t>(d));
  const int64_t i0 = index < 0 ? index + len : index;
  EMBER_KERNEL_CHECK(ctx, i0 >= 0 && i0 < len, InvalidArgument,
                     "select_copy.int_out: index %lld out of range for "
                     "size %lld",
                     static_cast<long long>(index), static_cast<long long>(len));
  int64_t sizes[kMaxTensorDim], strides[kMaxTensorDim];
  int r = 0;
  for (int i = 0; i < rank; ++i) {
    if (i == d) continue;
    sizes[r] = self.size(i);
    strides[r++] = self.strides()[static_cast<size_t>(i)];
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(r)) && out.scalar_type() == self.scalar_type(),
                     InvalidArgument, "select_copy.int_out: out has the wrong shape or dtype");
  strided_gather(static_cast<uint8_t*>(out.mutable_data_ptr()), static_cast<const uint8_t*>(self.const_data_ptr()),
                 self.element_size(), sizes, strides, r, i0 * self.strides()[static_cast<size_t>(d)]);
}

namespace {

// Whether `v` converts to T without overflow, as PyTorch's full checks ("value cannot be converted to type ...
// without overflow"); Half and BFloat16 against their own largest finite values.
template <typename T>
bool fill_fits(const Scalar& v) {
  const double d = v.to_double();
  const bool finite = d - d == 0.0;
  if constexpr (std::is_same<T, Half>::value) return !finite || (d <= 65504.0 && d >= -65504.0);
  if constexpr (std::is_same<T, BFloat16>::value) {
    return !finite || (d <= 3.3895313892515355e38 && d >= -3.3895313892515355e38);
  }
  if constexpr (std::is_arithmetic<T>::value) return v.is_integral() ? fits<T>(v.to<int64_t>()) : fits<T>(d);
  return true;
}

}  // namespace

void full_out(KernelContext& ctx, ArrayRef<int64_t> size, const Scalar& fill_value, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "full.out: out has the wrong shape");
  EMBER_DISPATCH(ctx, "full.out", selected_dtypes::full_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    EMBER_KERNEL_CHECK(ctx, fill_fits<T>(fill_value), InvalidArgument,
                       "full.out: fill value %g cannot be converted to %s without overflow", fill_value.to_double(),
                       scalar_type_name(out.scalar_type()));
    const T v = static_cast<T>(fill_value.to<C>());
    T* o = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = v;
  });
}

}  // namespace portable
}  // namespace ember
