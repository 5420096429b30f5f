// Indexing: gather, index_select, index_put (out and in place), masked_scatter, masked_select, nonzero,
// repeat_interleave, scatter (src and value), scatter_add, select_scatter, slice_scatter. Every index read from a
// tensor is checked against the dim it addresses before any memory is touched through it (negative ones wrap
// only where PyTorch wraps them: index_put, select_scatter); data-dependent output sizes are fitted into out's
// planned capacity or refused with the numbers. Elements move as bytes; only the sums (index_put with
// accumulate, scatter_add) are compiled per dtype.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/copy_util.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// This file's short name for EMBER_KERNEL_CHECK_OR_FALSE (runtime/kernel/kernel_context.h), which the helpers
// below use to return false to their kernel.
#define CHECK_OR_FALSE EMBER_KERNEL_CHECK_OR_FALSE

int64_t wrap(int64_t dim, int64_t rank) {
  const int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r) return -1;
  return dim < 0 ? dim + r : dim;
}

bool is_index_type(ScalarType t) { return t == ScalarType::Long || t == ScalarType::Int; }

int64_t load_index(const Tensor& t, int64_t off) {
  if (t.scalar_type() == ScalarType::Long) {
    int64_t v;
    memcpy(&v, static_cast<const uint8_t*>(t.const_data_ptr()) + off * 8, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, static_cast<const uint8_t*>(t.const_data_ptr()) + off * 4, 4);
  return v;
}

// Sizes and strides of t as a tensor of at least one dim (ATen treats 0-d and 1-element 1-d alike here).
int dims_of(const Tensor& t, int64_t* sizes, int64_t* strides) {
  if (t.dim() == 0) {
    sizes[0] = 1, strides[0] = 0;
    return 1;
  }
  for (int d = 0; d < t.dim(); ++d) sizes[d] = t.size(d), strides[d] = t.strides()[static_cast<size_t>(d)];
  return t.dim();
}

uint8_t* at(Tensor& t, int64_t off) {
  return static_cast<uint8_t*>(t.mutable_data_ptr()) + off * static_cast<int64_t>(t.element_size());
}
const uint8_t* at(const Tensor& t, int64_t off) {
  return static_cast<const uint8_t*>(t.const_data_ptr()) + off * static_cast<int64_t>(t.element_size());
}

// out takes self's shape and dtype and a copy of its elements (nothing moves when out is self).
bool copy_self(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out) {
  if (!fit_output(out, self.sizes()) || out.scalar_type() != self.scalar_type()) {
    EMBER_LOG(ERROR, "%s: out (%s, rank %d) must have self's shape and dtype (%s, rank %d)", name,
              scalar_type_name(out.scalar_type()), static_cast<int>(out.dim()), scalar_type_name(self.scalar_type()),
              static_cast<int>(self.dim()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  if (out.mutable_data_ptr() != self.const_data_ptr()) {
    strided_copy(out.mutable_data_ptr(), view_of(out), out.scalar_type(), self.const_data_ptr(), view_of(self),
                 self.scalar_type());
  }
  return true;
}

// a += b for one element of dtype t (t in Mask, checked by the caller): the sums' only per-dtype code, so the
// walks around them are compiled once, not once per dtype.
template <uint32_t Mask>
void add_element(uint8_t* a, const uint8_t* b, ScalarType t) {
  dispatch_dtype<Mask>(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T x, y;
    memcpy(&x, a, sizeof(T));
    memcpy(&y, b, sizeof(T));
    x = static_cast<T>(wrapping_add(static_cast<C>(x), static_cast<C>(y)));
    memcpy(a, &x, sizeof(T));
  });
}

// A data-dependent result of `sizes` fitted into out, or refused naming the element count and capacity.
bool fit_dynamic(KernelContext& ctx, const char* name, Tensor& out, const int64_t* sizes, size_t dim) {
  if (fit_output(out, sizes, dim)) return true;
  int64_t n = 1;
  for (size_t i = 0; i < dim; ++i) n *= sizes[i];
  EMBER_LOG(ERROR, "%s: the result has %lld elements (%lld bytes), out (rank %d) holds at most %zu bytes", name,
            static_cast<long long>(n), static_cast<long long>(n * static_cast<int64_t>(out.element_size())),
            static_cast<int>(out.dim()), out.impl()->capacity());
  ctx.fail(Error::InvalidArgument);
  return false;
}

// --- gather and scatter: out/self indexed along `dim` by the values of `index`, every other coordinate shared.

struct AlongDim {
  int rank = 0;
  int64_t dim = 0;
  int64_t index_sizes[kMaxTensorDim];
  int64_t index_strides[kMaxTensorDim];
};

// Checks index (Long or Int, self's rank, no larger than `bound` in any dim but `dim`, and no larger than `src`
// in any dim when given) and every index value against self's size along dim.
bool plan_along_dim(KernelContext& ctx, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor* src, AlongDim& p) {
  int64_t ss[kMaxTensorDim], st[kMaxTensorDim];
  const int sr = dims_of(self, ss, st);
  p.dim = wrap(dim, self.dim());
  CHECK_OR_FALSE(ctx, p.dim >= 0, InvalidArgument, "%s: dim %lld is out of range for a %d-d tensor", name,
                 static_cast<long long>(dim), static_cast<int>(self.dim()));
  CHECK_OR_FALSE(ctx, is_index_type(index.scalar_type()), InvalidArgument, "%s: index is %s, must be Long or Int", name,
                 scalar_type_name(index.scalar_type()));
  p.rank = dims_of(index, p.index_sizes, p.index_strides);
  CHECK_OR_FALSE(ctx, p.rank == sr, InvalidArgument, "%s: index has %d dims, self has %d", name,
                 static_cast<int>(index.dim()), static_cast<int>(self.dim()));
  int64_t rs[kMaxTensorDim], rt[kMaxTensorDim];
  const int rr = src ? dims_of(*src, rs, rt) : 0;
  CHECK_OR_FALSE(ctx, src == nullptr || rr == sr, InvalidArgument, "%s: src has %d dims, self has %d", name,
                 static_cast<int>(src ? src->dim() : 0), static_cast<int>(self.dim()));
  for (int d = 0; d < p.rank; ++d) {
    CHECK_OR_FALSE(ctx, (d == p.dim || p.index_sizes[d] <= ss[d]) && (!src || p.index_sizes[d] <= rs[d]),
                   InvalidArgument, "%s: index's size %lld in dim %d exceeds self's or src's", name,
                   static_cast<long long>(p.index_sizes[d]), d);
  }
  if (index.numel() == 0) return true;
  Walk w(p.index_sizes, p.rank);
  w.add(p.index_strides);
  const int64_t n = ss[p.dim];
  for (int64_t i = 0; i < index.numel(); ++i, w.next()) {
    const int64_t v = load_index(index, w.off[0]);
    CHECK_OR_FALSE(ctx, v >= 0 && v < n, InvalidArgument,
                   "%s: index %lld at position %lld is out of bounds for "
                   "dim %lld of size %lld",
                   name, static_cast<long long>(v), static_cast<long long>(i), static_cast<long long>(p.dim),
                   static_cast<long long>(n));
  }
  return true;
}

// Calls fn(big_off, small_off) for each index element: big_off addresses the tensor indexed along dim (index
// value as its coordinate there), small_off the tensor walked with index's coordinates.
template <class Fn>
void walk_along_dim(const AlongDim& p, const Tensor& index, const Tensor& big, const Tensor& small, Fn fn) {
  if (index.numel() == 0) return;
  int64_t bs[kMaxTensorDim], bt[kMaxTensorDim], ms[kMaxTensorDim], mt[kMaxTensorDim];
  dims_of(big, bs, bt);
  dims_of(small, ms, mt);
  Walk w(p.index_sizes, p.rank);
  const int64_t along = bt[p.dim];
  bt[p.dim] = 0;
  w.add(p.index_strides);
  w.add(bt);
  w.add(mt);
  for (int64_t i = 0; i < index.numel(); ++i, w.next()) fn(w.off[1] + load_index(index, w.off[0]) * along, w.off[2]);
}

}  // namespace

void gather_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad,
                Tensor& out) {
  (void)sparse_grad;  // gradients only
  AlongDim p;
  if (!plan_along_dim(ctx, "gather.out", self, dim, index, nullptr, p)) return;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, index.sizes()) && out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "gather.out: out must have index's shape and self's dtype (%s)",
                     scalar_type_name(self.scalar_type()));
  const size_t e = self.element_size();
  walk_along_dim(p, index, self, out, [&](int64_t s, int64_t o) { memmove(at(out, o), at(self, s), e); });
}

namespace {

template <class Fn>
void scatter_common(KernelContext& ctx, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor* src, Tensor& out, Fn fn) {
  AlongDim p;
  if (!plan_along_dim(ctx, name, self, dim, index, src, p)) return;
  EMBER_KERNEL_CHECK(ctx, src == nullptr || src->scalar_type() == self.scalar_type(), InvalidArgument,
                     "%s: src is %s, self is %s (they must match)", name,
                     scalar_type_name(src ? src->scalar_type() : self.scalar_type()),
                     scalar_type_name(self.scalar_type()));
  if (!copy_self(ctx, name, self, out)) return;
  walk_along_dim(p, index, out, src ? *src : index, fn);
}

}  // namespace

void scatter_src_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     Tensor& out) {
  const size_t e = self.element_size();
  scatter_common(ctx, "scatter.src_out", self, dim, index, &src, out,
                 [&](int64_t o, int64_t s) { memmove(at(out, o), at(src, s), e); });
}

void scatter_value_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                       Tensor& out) {
  // The value in out's dtype, once.
  uint8_t bytes[16] = {0};
  if (value.is_floating()) {
    const double v = value.to<double>();
    convert_element(bytes, self.scalar_type(), &v, ScalarType::Double);
  } else {
    const int64_t v = value.to<int64_t>();
    convert_element(bytes, self.scalar_type(), &v, ScalarType::Long);
  }
  const size_t e = self.element_size();
  scatter_common(ctx, "scatter.value_out", self, dim, index, nullptr, out,
                 [&](int64_t o, int64_t) { memcpy(at(out, o), bytes, e); });
}

void scatter_add_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     Tensor& out) {
  constexpr uint32_t kMask = selected_dtypes::scatter_add_out_portable;
  EMBER_DISPATCH(ctx, "scatter_add.out", kMask, self.scalar_type(), [](auto) {});
  const ScalarType t = self.scalar_type();
  scatter_common(ctx, "scatter_add.out", self, dim, index, &src, out,
                 [&](int64_t o, int64_t s) { add_element<kMask>(at(out, o), at(src, s), t); });
}

void index_select_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  const char* name = "index_select.out";
  const int64_t d = wrap(dim, self.dim());
  EMBER_KERNEL_CHECK(ctx, d >= 0, InvalidArgument, "%s: dim %lld is out of range for a %d-d tensor", name,
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, index.dim() <= 1 && is_index_type(index.scalar_type()), InvalidArgument,
                     "%s: index must be a 0-d or 1-d Long or Int tensor, got %d-d %s", name,
                     static_cast<int>(index.dim()), scalar_type_name(index.scalar_type()));
  const int64_t n = self.dim() == 0 ? 1 : self.size(static_cast<int32_t>(d));
  int64_t sizes[kMaxTensorDim];
  for (int i = 0; i < self.dim(); ++i) sizes[i] = i == d ? index.numel() : self.size(i);
  EMBER_KERNEL_CHECK(ctx, self.dim() > 0 || index.numel() == 1, InvalidArgument,
                     "%s: a 0-d self takes exactly one index, got %lld", name, static_cast<long long>(index.numel()));
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(out, sizes, static_cast<size_t>(self.dim())) && out.scalar_type() == self.scalar_type(),
                     InvalidArgument, "%s: out must have self's dtype and shape with %lld entries along dim %lld", name,
                     static_cast<long long>(index.numel()), static_cast<long long>(d));
  const int64_t istride = index.dim() == 1 ? index.strides()[0] : 0;
  for (int64_t k = 0; k < index.numel(); ++k) {
    const int64_t v = load_index(index, k * istride);
    EMBER_KERNEL_CHECK(ctx, v >= 0 && v < n, InvalidArgument,
                       "%s: index %lld at position %lld is out of bounds for "
                       "dim %lld of size %lld",
                       name, static_cast<long long>(v), static_cast<long long>(k), static_cast<long long>(d),
                       static_cast<long long>(n));
  }
  StridedView sv = view_of(self), dv = view_of(out);
  const int64_t sstep = self.dim() ? sv.strides[d] : 0, dstep = self.dim() ? dv.strides[d] : 0;
  if (self.dim() > 0) sv.drop(static_cast<int>(d)), dv.drop(static_cast<int>(d));
  for (int64_t k = 0; k < index.numel(); ++k) {
    sv.offset = load_index(index, k * istride) * sstep;
    dv.offset = k * dstep;
    strided_copy(out.mutable_data_ptr(), dv, out.scalar_type(), self.const_data_ptr(), sv, self.scalar_type());
  }
}

void select_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim, int64_t index,
                        Tensor& out) {
  const char* name = "select_scatter.out";
  const int64_t d = self.dim() > 0 ? wrap(dim, self.dim()) : -1;
  EMBER_KERNEL_CHECK(ctx, d >= 0, InvalidArgument, "%s: dim %lld is out of range for a %d-d tensor", name,
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  const int64_t n = self.size(static_cast<int32_t>(d));
  EMBER_KERNEL_CHECK(ctx, index >= -n && index < n, InvalidArgument,
                     "%s: index %lld is out of range for dim %lld of "
                     "size %lld",
                     name, static_cast<long long>(index), static_cast<long long>(d), static_cast<long long>(n));
  StridedView dv = view_of(self);
  dv.drop(static_cast<int>(d));
  bool same = src.dim() == dv.rank;
  for (int i = 0; same && i < dv.rank; ++i) same = src.size(i) == dv.sizes[i];
  EMBER_KERNEL_CHECK(ctx, same, InvalidArgument, "%s: src (rank %d) must have self's shape without dim %lld", name,
                     static_cast<int>(src.dim()), static_cast<long long>(d));
  if (!copy_self(ctx, name, self, out)) return;
  dv = view_of(out);
  dv.offset = (index < 0 ? index + n : index) * dv.strides[d];
  dv.drop(static_cast<int>(d));
  strided_copy(out.mutable_data_ptr(), dv, out.scalar_type(), src.const_data_ptr(), view_of(src), src.scalar_type());
}

void slice_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim, Optional<int64_t> start,
                       Optional<int64_t> end, int64_t step, Tensor& out) {
  const char* name = "slice_scatter.out";
  const int64_t d = self.dim() > 0 ? wrap(dim, self.dim()) : -1;
  EMBER_KERNEL_CHECK(ctx, d >= 0 && step > 0, InvalidArgument, "%s: dim %lld (of %d) or step %lld is invalid", name,
                     static_cast<long long>(dim), static_cast<int>(self.dim()), static_cast<long long>(step));
  const int64_t len = self.size(static_cast<int32_t>(d));
  auto clamp = [len](int64_t v) { return v < 0 ? (v + len < 0 ? 0 : v + len) : (v > len ? len : v); };
  const int64_t s = clamp(start.has_value() ? start.value() : 0), e = clamp(end.has_value() ? end.value() : len);
  const int64_t st = step > len ? (len > 0 ? len : 1) : step;  // keeps st * stride from overflowing; same count
  const int64_t count = e > s ? (e - s - 1) / st + 1 : 0;
  bool same = src.dim() == self.dim();
  for (int i = 0; same && i < self.dim(); ++i) same = src.size(i) == (i == d ? count : self.size(i));
  EMBER_KERNEL_CHECK(ctx, same, InvalidArgument, "%s: src must have self's shape with %lld entries along dim %lld",
                     name, static_cast<long long>(count), static_cast<long long>(d));
  if (!copy_self(ctx, name, self, out)) return;
  StridedView dv = view_of(out);
  dv.offset = s * dv.strides[d];
  dv.strides[d] *= st;
  dv.sizes[d] = count;
  strided_copy(out.mutable_data_ptr(), dv, out.scalar_type(), src.const_data_ptr(), view_of(src), src.scalar_type());
}

void nonzero_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  const char* name = "nonzero.out";
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == ScalarType::Long && out.dim() == 2, InvalidArgument,
                     "%s: out must be a 2-d Long tensor, got %d-d %s", name, static_cast<int>(out.dim()),
                     scalar_type_name(out.scalar_type()));
  int64_t count = 0;
  Walk w(self.sizes());
  w.add(self.strides());
  for (int64_t i = 0; i < self.numel(); ++i, w.next()) count += element_nonzero(at(self, w.off[0]), self.scalar_type());
  const int64_t sizes[2] = {count, self.dim()};
  if (!fit_dynamic(ctx, name, out, sizes, 2)) return;
  const int64_t rs = out.strides()[0], cs = out.strides()[1];
  Walk v(self.sizes());
  v.add(self.strides());
  int64_t k = 0;
  for (int64_t i = 0; i < self.numel(); ++i, v.next()) {
    if (!element_nonzero(at(self, v.off[0]), self.scalar_type())) continue;
    for (int d = 0; d < self.dim(); ++d) memcpy(at(out, k * rs + d * cs), &v.coord[d], 8);
    ++k;
  }
}

namespace {

// self and a Bool mask broadcast together: the walk over their common shape.
bool masked_walk(KernelContext& ctx, const char* name, const Tensor& self, const Tensor& mask, int32_t* shape,
                 int* rank, int64_t* self_st, int64_t* mask_st) {
  CHECK_OR_FALSE(ctx, mask.scalar_type() == ScalarType::Bool, InvalidArgument, "%s: mask is %s, must be Bool", name,
                 scalar_type_name(mask.scalar_type()));
  *rank = broadcast_shape(self.sizes(), mask.sizes(), shape);
  CHECK_OR_FALSE(ctx, *rank >= 0, InvalidArgument, "%s: self (rank %d) and mask (rank %d) do not broadcast", name,
                 static_cast<int>(self.dim()), static_cast<int>(mask.dim()));
  const ArrayRef<int32_t> s(shape, static_cast<size_t>(*rank));
  broadcast_strides(self, s, self_st);
  broadcast_strides(mask, s, mask_st);
  return true;
}

int64_t count_true(const Tensor& mask, ArrayRef<int32_t> shape, const int64_t* mask_st) {
  Walk w(shape);
  w.add(mask_st);
  int64_t n = 1, count = 0;
  for (int32_t s : shape) n *= s;
  const Bool8* m = mask.const_data_ptr<Bool8>();
  for (int64_t i = 0; i < n; ++i, w.next()) count += m[w.off[0]] ? 1 : 0;
  return count;
}

}  // namespace

void masked_select_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, Tensor& out) {
  const char* name = "masked_select.out";
  int32_t shape[kMaxTensorDim];
  int rank = 0;
  int64_t sst[kMaxTensorDim], mst[kMaxTensorDim];
  if (!masked_walk(ctx, name, self, mask, shape, &rank, sst, mst)) return;
  EMBER_KERNEL_CHECK(ctx, out.dim() == 1 && out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "%s: out must be 1-d %s", name, scalar_type_name(self.scalar_type()));
  const ArrayRef<int32_t> s(shape, static_cast<size_t>(rank));
  const int64_t count = count_true(mask, s, mst);
  if (!fit_dynamic(ctx, name, out, &count, 1)) return;
  Walk w(s);
  w.add(sst);
  w.add(mst);
  const Bool8* m = mask.const_data_ptr<Bool8>();
  const size_t e = self.element_size();
  const int64_t ostride = out.strides()[0];
  int64_t n = 1, k = 0;
  for (int32_t v : s) n *= v;
  for (int64_t i = 0; i < n; ++i, w.next()) {
    if (m[w.off[1]]) memmove(at(out, (k++) * ostride), at(self, w.off[0]), e);
  }
}

void masked_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, const Tensor& source, Tensor& out) {
  const char* name = "masked_scatter.out";
  int32_t shape[kMaxTensorDim];
  int rank = 0;
  int64_t sst[kMaxTensorDim], mst[kMaxTensorDim];
  if (!masked_walk(ctx, name, self, mask, shape, &rank, sst, mst)) return;
  EMBER_KERNEL_CHECK(ctx, source.scalar_type() == self.scalar_type(), InvalidArgument,
                     "%s: source is %s, self is %s (they must match)", name, scalar_type_name(source.scalar_type()),
                     scalar_type_name(self.scalar_type()));
  const ArrayRef<int32_t> s(shape, static_cast<size_t>(rank));
  const int64_t count = count_true(mask, s, mst);
  EMBER_KERNEL_CHECK(ctx, count <= source.numel(), InvalidArgument, "%s: mask has %lld true elements, source only %lld",
                     name, static_cast<long long>(count), static_cast<long long>(source.numel()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, s) && out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "%s: out must have the broadcast shape of self and mask, and self's dtype", name);
  StridedView sv;
  sv.rank = rank;
  for (int d = 0; d < rank; ++d) sv.sizes[d] = shape[d], sv.strides[d] = sst[d];
  strided_copy(out.mutable_data_ptr(), view_of(out), out.scalar_type(), self.const_data_ptr(), sv, self.scalar_type());
  Walk w(s);
  w.add(out.strides());
  w.add(mst);
  const Bool8* m = mask.const_data_ptr<Bool8>();
  const size_t e = self.element_size();
  int64_t k = 0;
  for (int64_t i = 0; i < out.numel(); ++i, w.next()) {
    if (!m[w.off[1]]) continue;
    memmove(at(out, w.off[0]), at(source, offset_of(k++, source.sizes(), source.strides())), e);
  }
}

void repeat_interleave_tensor_out(KernelContext& ctx, const Tensor& repeats, Optional<int64_t> output_size,
                                  Tensor& out) {
  const char* name = "repeat_interleave.Tensor_out";
  EMBER_KERNEL_CHECK(ctx, repeats.dim() <= 1 && is_index_type(repeats.scalar_type()), InvalidArgument,
                     "%s: repeats must be a 0-d or 1-d Long or Int tensor, got %d-d %s", name,
                     static_cast<int>(repeats.dim()), scalar_type_name(repeats.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, out.dim() == 1 && out.scalar_type() == repeats.scalar_type(), InvalidArgument,
                     "%s: out must be 1-d %s", name, scalar_type_name(repeats.scalar_type()));
  const int64_t stride = repeats.dim() == 1 ? repeats.strides()[0] : 0;
  int64_t total = 0;
  for (int64_t i = 0; i < repeats.numel(); ++i) {
    const int64_t r = load_index(repeats, i * stride);
    EMBER_KERNEL_CHECK(ctx, r >= 0 && !__builtin_add_overflow(total, r, &total) && total <= INT32_MAX, InvalidArgument,
                       "%s: repeat %lld at position %lld is negative or the total exceeds 2^31", name,
                       static_cast<long long>(r), static_cast<long long>(i));
  }
  EMBER_KERNEL_CHECK(ctx, !output_size.has_value() || output_size.value() == total, InvalidArgument,
                     "%s: output_size %lld differs from the repeats' sum %lld", name,
                     static_cast<long long>(output_size.has_value() ? output_size.value() : 0),
                     static_cast<long long>(total));
  if (!fit_dynamic(ctx, name, out, &total, 1)) return;
  const int64_t ostride = out.strides()[0];
  int64_t k = 0;
  for (int64_t i = 0; i < repeats.numel(); ++i) {
    const int64_t r = load_index(repeats, i * stride);
    for (int64_t j = 0; j < r; ++j) convert_element(at(out, (k++) * ostride), out.scalar_type(), &i, ScalarType::Long);
  }
}

// --- index_put: out[indices] = values (or += with accumulate) --------------------------------------------------

namespace {

// Where self[indices] lives: either integer index tensors (broadcast together, as index.Tensor), or one Bool
// mask covering `mask_dims` dims from `mask_at`. The result's shape is [prefix][broadcast][suffix]; `rest` lists
// self's non-indexed dims in result order and `rest_pos` their result positions.
struct PutPlan {
  bool mask = false;
  int mask_at = 0, mask_dims = 0;
  int bdim = 0;
  int32_t bshape[kMaxTensorDim];
  int bstart = 0;
  int rank = 0;  // of the result
  int32_t shape[kMaxViewDim];
  int nrest = 0;
  int rest[kMaxTensorDim], rest_pos[kMaxTensorDim];
  int64_t vstride[kMaxViewDim];  // values' strides broadcast over the result
};

bool plan_put(KernelContext& ctx, const char* name, const Tensor& self, OptionalTensorList indices,
              const Tensor& values, PutPlan& p) {
  const int rank = self.dim();
  CHECK_OR_FALSE(ctx, static_cast<int>(indices.size()) <= rank, InvalidArgument, "%s: %zu indices for a %d-d tensor",
                 name, indices.size(), rank);
  CHECK_OR_FALSE(ctx, values.scalar_type() == self.scalar_type(), InvalidArgument,
                 "%s: values are %s, self is %s (they must match)", name, scalar_type_name(values.scalar_type()),
                 scalar_type_name(self.scalar_type()));
  int count = 0, first = -1, last = -1;
  bool any_mask = false;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor* t = indices[k];
    if (t == nullptr) continue;
    const ScalarType st = t->scalar_type();
    CHECK_OR_FALSE(ctx, is_index_type(st) || st == ScalarType::Bool || st == ScalarType::Byte, InvalidArgument,
                   "%s: index %zu is %s; indices must be Long, Int, Bool or Byte", name, k, scalar_type_name(st));
    any_mask = any_mask || st == ScalarType::Bool || st == ScalarType::Byte;
    if (first < 0) first = static_cast<int>(k);
    last = static_cast<int>(k);
    ++count;
  }
  CHECK_OR_FALSE(ctx, count > 0, InvalidArgument, "%s: all indices are None", name);
  CHECK_OR_FALSE(ctx, !any_mask || count == 1, NotSupported,
                 "%s: a boolean mask together with other index tensors is not supported", name);
  bool indexed[kMaxTensorDim] = {false};
  if (any_mask) {
    const Tensor& m = *indices[static_cast<size_t>(first)];
    p.mask = true;
    p.mask_at = first;
    p.mask_dims = m.dim();
    CHECK_OR_FALSE(ctx, first + m.dim() <= rank, InvalidArgument, "%s: a %d-d mask at index %d of a %d-d tensor", name,
                   static_cast<int>(m.dim()), first, rank);
    for (int j = 0; j < m.dim(); ++j) {
      CHECK_OR_FALSE(ctx, m.size(j) == self.size(first + j), InvalidArgument,
                     "%s: mask's size %d in dim %d differs from self's %d in dim %d", name, static_cast<int>(m.size(j)),
                     j, static_cast<int>(self.size(first + j)), first + j);
      indexed[first + j] = true;
    }
    int64_t trues = 0;
    Walk w(m.sizes());
    w.add(m.strides());
    for (int64_t i = 0; i < m.numel(); ++i, w.next()) trues += at(m, w.off[0])[0] != 0;
    p.bdim = 1;
    p.bshape[0] = static_cast<int32_t>(trues);
  } else {
    for (size_t k = 0; k < indices.size(); ++k) {
      const Tensor* t = indices[k];
      if (t == nullptr) continue;
      indexed[k] = true;
      int32_t next[kMaxTensorDim];
      const int n = p.bdim == 0 && k == static_cast<size_t>(first)
                        ? broadcast_shape(t->sizes(), ArrayRef<int32_t>(), next)
                        : broadcast_shape(ArrayRef<int32_t>(p.bshape, static_cast<size_t>(p.bdim)), t->sizes(), next);
      CHECK_OR_FALSE(ctx, n >= 0, InvalidArgument, "%s: index tensors do not broadcast", name);
      p.bdim = n;
      memcpy(p.bshape, next, sizeof(int32_t) * static_cast<size_t>(n));
      // Every value checked now (negative ones wrap, as PyTorch does), so the writes below need no checks.
      const int64_t size = self.size(static_cast<int32_t>(k));
      Walk w(t->sizes());
      w.add(t->strides());
      for (int64_t i = 0; i < t->numel(); ++i, w.next()) {
        const int64_t v = load_index(*t, w.off[0]);
        CHECK_OR_FALSE(ctx, v >= -size && v < size, InvalidArgument,
                       "%s: index %lld at position %lld of index "
                       "%zu is out of bounds for dim %zu of size %lld",
                       name, static_cast<long long>(v), static_cast<long long>(i), k, k, static_cast<long long>(size));
      }
    }
  }
  bool adjacent = true;
  for (int k = first; k <= last; ++k) adjacent = adjacent && indices[static_cast<size_t>(k)] != nullptr;
  const int insert_at = adjacent ? first : 0;
  for (int d = 0; d < insert_at; ++d) {
    p.rest_pos[p.nrest] = p.rank;
    p.rest[p.nrest++] = d;
    p.shape[p.rank++] = self.size(d);
  }
  p.bstart = p.rank;
  for (int d = 0; d < p.bdim; ++d) p.shape[p.rank++] = p.bshape[d];
  for (int d = insert_at; d < rank; ++d) {
    if (indexed[d]) continue;
    p.rest_pos[p.nrest] = p.rank;
    p.rest[p.nrest++] = d;
    p.shape[p.rank++] = self.size(d);
  }
  // The writes are self[indices]'s elements, a tensor that is never built (values broadcast to it): index tensors
  // of [4096, 1] and [1, 4096] over 4096-element slices would ask for 2^36 of them. It is held to what a tensor
  // may hold (runtime/core/tensor.cc's checked_numel), so no call outruns every tensor it was given by more.
  int64_t writes = 1;
  for (int d = 0; d < p.rank; ++d) {
    writes *= p.shape[d];
    CHECK_OR_FALSE(ctx, writes <= INT32_MAX, InvalidArgument,
                   "%s: self[indices] would have more than 2^31-1 elements (over %d of its %d dims); a "
                   "tensor holds at most 2^31-1",
                   name, d + 1, p.rank);
  }
  // values broadcast to the result (leading size-1 dims beyond its rank allowed, as ATen strips them).
  bool ok = true;
  const int vr = values.dim();
  for (int j = 0; j < vr - p.rank; ++j) ok = ok && values.size(j) == 1;
  for (int d = 0; d < p.rank; ++d) {
    const int j = d - (p.rank - vr);
    const int32_t s = j < 0 ? 1 : values.size(j);
    ok = ok && (s == 1 || s == p.shape[d]);
    p.vstride[d] = s == 1 ? 0 : values.strides()[static_cast<size_t>(j)];
  }
  CHECK_OR_FALSE(ctx, ok, InvalidArgument, "%s: values (rank %d) do not broadcast to the indexed result (rank %d)",
                 name, vr, p.rank);
  return true;
}

// fn(out_off, values_off, n) for every run of n elements of self[indices] that lie one after another in both out
// and values (the trailing non-indexed dims both tensors hold contiguously: a KV cache's row of heads x head_dim
// written at a position is one run, not a walk per element).
template <class Fn>
void walk_put(const PutPlan& p, const Tensor& out, OptionalTensorList indices, Fn fn) {
  int32_t rest_sizes[kMaxTensorDim];
  int64_t rest_ost[kMaxTensorDim], rest_vst[kMaxTensorDim];
  int64_t inner = 1;
  for (int j = 0; j < p.nrest; ++j) {
    rest_sizes[j] = out.size(p.rest[j]);
    rest_ost[j] = out.strides()[static_cast<size_t>(p.rest[j])];
    rest_vst[j] = p.vstride[p.rest_pos[j]];
    inner *= rest_sizes[j];
  }
  if (inner == 0) return;
  // The contiguous tail: trailing rest dims whose strides in out and values both continue the run (size-1 dims
  // have no stride that matters).
  int outer_dims = p.nrest;
  int64_t run = 1;
  while (outer_dims > 0) {
    const int j = outer_dims - 1;
    if (rest_sizes[j] != 1 && (rest_ost[j] != run || rest_vst[j] != run)) break;
    run *= rest_sizes[j];
    --outer_dims;
  }
  const ArrayRef<int32_t> rs(rest_sizes, static_cast<size_t>(outer_dims));
  const int64_t runs = inner / run;
  auto run_inner = [&](int64_t base, int64_t vbase) {
    Walk w(rs);
    w.add(rest_ost, base);
    w.add(rest_vst, vbase);
    for (int64_t i = 0; i < runs; ++i, w.next()) fn(w.off[0], w.off[1], run);
  };
  if (p.mask) {
    const Tensor& m = *indices[static_cast<size_t>(p.mask_at)];
    Walk w(m.sizes());
    w.add(m.strides());
    int64_t c = 0;
    for (int64_t i = 0; i < m.numel(); ++i, w.next()) {
      if (at(m, w.off[0])[0] == 0) continue;
      int64_t base = 0;
      for (int j = 0; j < p.mask_dims; ++j) base += w.coord[j] * out.strides()[static_cast<size_t>(p.mask_at + j)];
      run_inner(base, (c++) * p.vstride[p.bstart]);
    }
    return;
  }
  int64_t bnumel = 1;
  for (int d = 0; d < p.bdim; ++d) bnumel *= p.bshape[d];
  const ArrayRef<int32_t> bs(p.bshape, static_cast<size_t>(p.bdim));
  // Each index tensor's strides over the broadcast shape, once.
  int64_t ist[kMaxTensorDim][kMaxTensorDim];
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] != nullptr) broadcast_strides(*indices[k], bs, ist[k]);
  }
  Walk bw(bs);
  bw.add(p.vstride + p.bstart);
  for (int64_t b = 0; b < bnumel; ++b, bw.next()) {
    int64_t base = 0;
    for (size_t k = 0; k < indices.size(); ++k) {
      const Tensor* t = indices[k];
      if (t == nullptr) continue;
      int64_t off = 0;
      for (int d = 0; d < p.bdim; ++d) off += bw.coord[d] * ist[k][d];
      const int64_t size = out.size(static_cast<int32_t>(k));
      int64_t v = load_index(*t, off);
      if (v < 0) v += size;
      base += v * out.strides()[k];
    }
    run_inner(base, bw.off[0]);
  }
}

template <uint32_t Mask>
void index_put_impl(KernelContext& ctx, const char* name, const Tensor& self, OptionalTensorList indices,
                    const Tensor& values, bool accumulate, Tensor& out) {
  PutPlan p;
  if (!plan_put(ctx, name, self, indices, values, p)) return;
  if (!copy_self(ctx, name, self, out)) return;
  const size_t e = out.element_size();
  if (!accumulate) {
    walk_put(p, out, indices,
             [&](int64_t o, int64_t v, int64_t n) { memmove(at(out, o), at(values, v), e * static_cast<size_t>(n)); });
    return;
  }
  EMBER_DISPATCH(ctx, name, Mask, out.scalar_type(), [](auto) {});
  const ScalarType t = out.scalar_type();
  walk_put(p, out, indices, [&](int64_t o, int64_t v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) add_element<Mask>(at(out, o + i), at(values, v + i), t);
  });
}

}  // namespace

void index_put_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices, const Tensor& values,
                   bool accumulate, Tensor& out) {
  index_put_impl<selected_dtypes::index_put_out_portable>(ctx, "index_put.out", self, indices, values, accumulate, out);
}

void index_put_(KernelContext& ctx, Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  index_put_impl<selected_dtypes::index_put__portable>(ctx, "index_put_", self, indices, values, accumulate, self);
}

#undef CHECK_OR_FALSE

}  // namespace portable
}  // namespace ember
