// Copies and views: as_strided, copy, diagonal, flip, narrow, roll, repeat, squeeze (one dim), stack, t,
// transpose, tril, unfold, view_as_real, ExecuTorch's host/device copies and _empty_dim_order. Each view is a
// StridedView over self's memory copied into out through out's own strides (util/copy_util.h), so any dim order
// works and no kernel here instantiates code per dtype.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/copy_util.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// dim wrapped into [0, rank) as ATen does (a 0-d tensor takes -1 and 0), or -1 when out of range.
int64_t wrap(int64_t dim, int64_t rank) {
  const int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r) return -1;
  return dim < 0 ? dim + r : dim;
}

// out takes `v`'s sizes (resized where bounded) and must have self's dtype; then v's elements are copied.
void copy_view(KernelContext& ctx, const char* name, const Tensor& self, const StridedView& v, Tensor& out) {
  int64_t sizes[kMaxTensorDim];
  EMBER_KERNEL_CHECK(ctx, v.rank <= kMaxTensorDim, InvalidArgument, "%s: result has %d dims, more than %d", name,
                     v.rank, kMaxTensorDim);
  for (int d = 0; d < v.rank; ++d) sizes[d] = v.sizes[d];
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(v.rank)), InvalidArgument,
                     "%s: out (rank %d) cannot take the result's shape (rank %d)", name, static_cast<int>(out.dim()),
                     v.rank);
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument, "%s: out is %s, self is %s", name,
                     scalar_type_name(out.scalar_type()), scalar_type_name(self.scalar_type()));
  strided_copy(out.mutable_data_ptr(), view_of(out), out.scalar_type(), self.const_data_ptr(), v, self.scalar_type());
}

}  // namespace

void as_strided_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> size, ArrayRef<int64_t> stride,
                         Optional<int64_t> storage_offset, Tensor& out) {
  const char* name = "as_strided_copy.out";
  EMBER_KERNEL_CHECK(ctx, size.size() == stride.size() && size.size() <= static_cast<size_t>(kMaxTensorDim),
                     InvalidArgument, "%s: %zu sizes and %zu strides (at most %d)", name, size.size(), stride.size(),
                     kMaxTensorDim);
  StridedView v;
  v.rank = static_cast<int>(size.size());
  v.offset = storage_offset.has_value() ? storage_offset.value() : 0;
  EMBER_KERNEL_CHECK(ctx, v.offset >= 0, InvalidArgument, "%s: storage offset %lld is negative", name,
                     static_cast<long long>(v.offset));
  // The last element reached must lie within self's memory (ATen checks against the storage).
  int64_t last = v.offset;
  bool empty = false;
  for (int d = 0; d < v.rank; ++d) {
    EMBER_KERNEL_CHECK(ctx, size[d] >= 0 && size[d] <= INT32_MAX && stride[d] >= 0, InvalidArgument,
                       "%s: size %lld or stride %lld of dim %d is negative or too large", name,
                       static_cast<long long>(size[d]), static_cast<long long>(stride[d]), d);
    v.sizes[d] = size[d], v.strides[d] = stride[d];
    empty = empty || size[d] == 0;
    int64_t step = 0;
    EMBER_KERNEL_CHECK(ctx,
                       !__builtin_mul_overflow(size[d] == 0 ? 0 : size[d] - 1, stride[d], &step) &&
                           !__builtin_add_overflow(last, step, &last),
                       InvalidArgument, "%s: the view's extent overflows int64", name);
  }
  EMBER_KERNEL_CHECK(ctx, empty || last < self.numel(), InvalidArgument,
                     "%s: the view reaches element %lld, self has %lld", name, static_cast<long long>(last),
                     static_cast<long long>(self.numel()));
  if (empty) v.offset = 0;
  // Strides address self's memory directly, whatever its dim order.
  copy_view(ctx, name, self, v, out);
}

void copy_out(KernelContext& ctx, const Tensor& self, const Tensor& src, bool non_blocking, Tensor& out) {
  (void)non_blocking;
  StridedView sv = view_of(self);
  EMBER_KERNEL_CHECK(ctx, broadcast_strides(src, self.sizes(), sv.strides), InvalidArgument,
                     "copy.out: src (rank %d) does not broadcast to self's shape (rank %d)",
                     static_cast<int>(src.dim()), static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument, "copy.out: out must have self's shape");
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument, "copy.out: out is %s, self is %s",
                     scalar_type_name(out.scalar_type()), scalar_type_name(self.scalar_type()));
  strided_copy(out.mutable_data_ptr(), view_of(out), out.scalar_type(), src.const_data_ptr(), sv, src.scalar_type());
}

void diagonal_copy_out(KernelContext& ctx, const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2,
                       Tensor& out) {
  const int64_t a = wrap(dim1, self.dim()), b = wrap(dim2, self.dim());
  EMBER_KERNEL_CHECK(ctx, self.dim() >= 2 && a >= 0 && b >= 0 && a != b, InvalidArgument,
                     "diagonal_copy.out: dims %lld and %lld of a %d-d tensor must be two different dims",
                     static_cast<long long>(dim1), static_cast<long long>(dim2), static_cast<int>(self.dim()));
  const int64_t n1 = self.size(static_cast<int32_t>(a)), n2 = self.size(static_cast<int32_t>(b));
  const int64_t s1 = self.strides()[static_cast<size_t>(a)], s2 = self.strides()[static_cast<size_t>(b)];
  StridedView v = view_of(self);
  // Offsets beyond either size give an empty diagonal (clamped first so nothing below overflows).
  int64_t len = 0;
  if (offset >= 0 && offset < n2) {
    len = n1 < n2 - offset ? n1 : n2 - offset;
    v.offset = offset * s2;
  } else if (offset < 0 && offset > -n1) {
    len = n1 + offset < n2 ? n1 + offset : n2;
    v.offset = -offset * s1;
  }
  v.drop(static_cast<int>(a > b ? a : b));
  v.drop(static_cast<int>(a > b ? b : a));
  v.insert(v.rank, len, s1 + s2);
  copy_view(ctx, "diagonal_copy.out", self, v, out);
}

void flip_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dims, Tensor& out) {
  StridedView v = view_of(self);
  bool seen[kMaxTensorDim] = {false};
  for (int64_t dim : dims) {
    const int64_t d = wrap(dim, self.dim());
    EMBER_KERNEL_CHECK(ctx, d >= 0 && !seen[d], InvalidArgument,
                       "flip.out: dim %lld is out of range for a %d-d tensor or repeated", static_cast<long long>(dim),
                       static_cast<int>(self.dim()));
    seen[d] = true;
    if (d >= self.dim() || v.sizes[d] == 0) continue;  // a 0-d tensor's dim 0, or an empty dim: nothing moves
    v.offset += (v.sizes[d] - 1) * v.strides[d];
    v.strides[d] = -v.strides[d];
  }
  copy_view(ctx, "flip.out", self, v, out);
}

void narrow_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t start, int64_t length, Tensor& out) {
  const int64_t d = self.dim() > 0 ? wrap(dim, self.dim()) : -1;
  EMBER_KERNEL_CHECK(ctx, d >= 0, InvalidArgument, "narrow_copy.out: dim %lld is out of range for a %d-d tensor",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  const int64_t n = self.size(static_cast<int32_t>(d));
  const int64_t s = start < 0 && start >= -n ? start + n : start;
  EMBER_KERNEL_CHECK(ctx, s >= 0 && s <= n && length >= 0 && length <= n - s, InvalidArgument,
                     "narrow_copy.out: start %lld and length %lld exceed dim %lld of size %lld",
                     static_cast<long long>(start), static_cast<long long>(length), static_cast<long long>(d),
                     static_cast<long long>(n));
  StridedView v = view_of(self);
  v.offset = s * v.strides[d];
  v.sizes[d] = length;
  copy_view(ctx, "narrow_copy.out", self, v, out);
}

void roll_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> shifts, ArrayRef<int64_t> dims, Tensor& out) {
  const char* name = "roll.out";
  EMBER_KERNEL_CHECK(ctx, !shifts.empty() && (dims.empty() ? shifts.size() == 1 : dims.size() == shifts.size()),
                     InvalidArgument, "%s: %zu shifts for %zu dims (one shift when dims is empty)", name, shifts.size(),
                     dims.size());
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()) && out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "%s: out must have self's shape and dtype", name);
  const int64_t n = self.numel();
  if (n == 0) return;
  if (dims.empty()) {
    // Over the flattened tensor: out[i] = self[(i - shift) mod n] in row-major order.
    const int64_t s = ((shifts[0] % n) + n) % n;
    const size_t e = self.element_size();
    uint8_t* o = static_cast<uint8_t*>(out.mutable_data_ptr());
    const uint8_t* x = static_cast<const uint8_t*>(self.const_data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = i >= s ? i - s : i - s + n;
      memmove(o + offset_of(i, out.sizes(), out.strides()) * static_cast<int64_t>(e),
              x + offset_of(j, self.sizes(), self.strides()) * static_cast<int64_t>(e), e);
    }
    return;
  }
  int64_t shift[kMaxTensorDim] = {0};
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = self.dim() > 0 ? wrap(dims[k], self.dim()) : -1;
    EMBER_KERNEL_CHECK(ctx, d >= 0, InvalidArgument, "%s: dim %lld is out of range for a %d-d tensor", name,
                       static_cast<long long>(dims[k]), static_cast<int>(self.dim()));
    const int64_t size = self.size(static_cast<int32_t>(d));
    shift[d] = (shift[d] + ((shifts[k] % size) + size) % size) % size;  // a repeated dim rolls again
  }
  // Each rolled dim splits into two blocks that swap places: 2^k strided copies for k rolled dims.
  int rolled[kMaxTensorDim], k = 0;
  for (int d = 0; d < self.dim(); ++d) {
    if (shift[d] != 0) rolled[k++] = d;
  }
  const StridedView sv0 = view_of(self), dv0 = view_of(out);
  for (uint32_t piece = 0; piece < (1u << k); ++piece) {
    StridedView sv = sv0, dv = dv0;
    for (int j = 0; j < k; ++j) {
      const int d = rolled[j];
      const int64_t size = sv0.sizes[d], s = shift[d];
      // Block 0: self[0, size - s) -> out[s, size); block 1: self[size - s, size) -> out[0, s).
      const bool second = (piece >> j) & 1u;
      sv.offset += (second ? size - s : 0) * sv.strides[d];
      dv.offset += (second ? 0 : s) * dv.strides[d];
      dv.sizes[d] = second ? s : size - s;
    }
    strided_copy(out.mutable_data_ptr(), dv, out.scalar_type(), self.const_data_ptr(), sv, self.scalar_type());
  }
}

void repeat_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> repeats, Tensor& out) {
  const char* name = "repeat.out";
  const int r = static_cast<int>(repeats.size()), lead = r - self.dim();
  EMBER_KERNEL_CHECK(ctx, lead >= 0 && r <= kMaxTensorDim, InvalidArgument,
                     "%s: %d repeats for a %d-d tensor (need at least as many, at most %d)", name, r,
                     static_cast<int>(self.dim()), kMaxTensorDim);
  int64_t sizes[kMaxTensorDim];
  // Each dim d as (repeats[d], size[d]): self's elements read with stride 0 across the repeats; out's memory
  // for dim d of size repeats*size is the same as (repeats, size) with strides (size * stride, stride).
  StridedView sv, dv;
  sv.rank = dv.rank = 2 * r;
  for (int d = 0; d < r; ++d) {
    const int64_t in = d < lead ? 1 : self.size(d - lead);
    const int64_t st = d < lead ? 0 : self.strides()[static_cast<size_t>(d - lead)];
    EMBER_KERNEL_CHECK(ctx,
                       repeats[d] >= 0 && !__builtin_mul_overflow(repeats[d], in, &sizes[d]) && sizes[d] <= INT32_MAX,
                       InvalidArgument, "%s: repeat %lld of dim %d is negative or makes it exceed 2^31", name,
                       static_cast<long long>(repeats[d]), d);
    sv.sizes[2 * d] = dv.sizes[2 * d] = repeats[d];
    sv.sizes[2 * d + 1] = dv.sizes[2 * d + 1] = in;
    sv.strides[2 * d] = 0;
    sv.strides[2 * d + 1] = st;
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(r)) && out.scalar_type() == self.scalar_type(),
                     InvalidArgument, "%s: out must have the repeated shape and self's dtype", name);
  for (int d = 0; d < r; ++d) {
    const int64_t st = out.strides()[static_cast<size_t>(d)];
    dv.strides[2 * d] = dv.sizes[2 * d + 1] * st;
    dv.strides[2 * d + 1] = st;
  }
  strided_copy(out.mutable_data_ptr(), dv, out.scalar_type(), self.const_data_ptr(), sv, self.scalar_type());
}

void squeeze_copy_dim_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  const int64_t d = wrap(dim, self.dim());
  EMBER_KERNEL_CHECK(ctx, d >= 0, InvalidArgument, "squeeze_copy.dim_out: dim %lld is out of range for a %d-d tensor",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  StridedView v = view_of(self);
  if (self.dim() > 0 && v.sizes[d] == 1) v.drop(static_cast<int>(d));
  copy_view(ctx, "squeeze_copy.dim_out", self, v, out);
}

void stack_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out) {
  const char* name = "stack.out";
  EMBER_KERNEL_CHECK(ctx, tensors.size() > 0, InvalidArgument, "%s: no tensors", name);
  const Tensor& first = tensors[0];
  const int64_t d = wrap(dim, first.dim() + 1);
  EMBER_KERNEL_CHECK(ctx, d >= 0 && first.dim() < kMaxTensorDim, InvalidArgument,
                     "%s: dim %lld is out of range for stacking %d-d tensors", name, static_cast<long long>(dim),
                     static_cast<int>(first.dim()));
  for (size_t k = 0; k < tensors.size(); ++k) {
    EMBER_KERNEL_CHECK(ctx, same_shape(tensors[k], first), InvalidArgument,
                       "%s: tensor %zu's shape differs from tensor 0's", name, k);
  }
  int64_t sizes[kMaxTensorDim];
  for (int i = 0, j = 0; i <= first.dim(); ++i)
    sizes[i] = i == d ? static_cast<int64_t>(tensors.size()) : first.size(j++);
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(first.dim() + 1)), InvalidArgument,
                     "%s: out cannot take the stacked shape", name);
  StridedView dv = view_of(out);
  const int64_t step = dv.strides[d];
  dv.drop(static_cast<int>(d));
  for (size_t k = 0; k < tensors.size(); ++k) {
    // Mixed input dtypes are converted into out's (PyTorch promotes; export already chose out's dtype).
    strided_copy(out.mutable_data_ptr(), dv, out.scalar_type(), tensors[k].const_data_ptr(), view_of(tensors[k]),
                 tensors[k].scalar_type());
    dv.offset += step;
  }
}

void transpose_copy_int_out(KernelContext& ctx, const Tensor& self, int64_t dim0, int64_t dim1, Tensor& out) {
  const int64_t a = wrap(dim0, self.dim()), b = wrap(dim1, self.dim());
  EMBER_KERNEL_CHECK(ctx, a >= 0 && b >= 0, InvalidArgument,
                     "transpose_copy.int_out: dims %lld and %lld are out of range for a %d-d tensor",
                     static_cast<long long>(dim0), static_cast<long long>(dim1), static_cast<int>(self.dim()));
  StridedView v = view_of(self);
  if (self.dim() > 0) {
    const int64_t sz = v.sizes[a], st = v.strides[a];
    v.sizes[a] = v.sizes[b], v.strides[a] = v.strides[b];
    v.sizes[b] = sz, v.strides[b] = st;
  }
  copy_view(ctx, "transpose_copy.int_out", self, v, out);
}

void t_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, self.dim() <= 2, InvalidArgument, "t_copy.out: self is %d-d; t() takes at most 2 dims",
                     static_cast<int>(self.dim()));
  StridedView v = view_of(self);
  if (self.dim() == 2) {
    v.sizes[0] = self.size(1), v.strides[0] = self.strides()[1];
    v.sizes[1] = self.size(0), v.strides[1] = self.strides()[0];
  }
  copy_view(ctx, "t_copy.out", self, v, out);
}

void tril_out(KernelContext& ctx, const Tensor& self, int64_t diagonal, Tensor& out) {
  const char* name = "tril.out";
  EMBER_KERNEL_CHECK(ctx, self.dim() >= 2, InvalidArgument, "%s: self is %d-d, needs at least 2 dims", name,
                     static_cast<int>(self.dim()));
  copy_view(ctx, name, self, view_of(self), out);
  if (ctx.failure() != Error::Ok) return;
  const int r = self.dim();
  const int64_t rows = self.size(r - 2), cols = self.size(r - 1);
  // Clamped so that i + diagonal + 1 below cannot overflow: beyond these bounds nothing (or everything) is kept.
  const int64_t diag = diagonal < -rows ? -rows : (diagonal > cols ? cols : diagonal);
  const int64_t rs = out.strides()[static_cast<size_t>(r - 2)], cs = out.strides()[static_cast<size_t>(r - 1)];
  const size_t e = out.element_size();
  uint8_t* o = static_cast<uint8_t*>(out.mutable_data_ptr());
  int64_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= self.size(d);
  if (batches == 0 || rows == 0 || cols == 0) return;
  Walk w(ArrayRef<int32_t>(out.sizes().data(), static_cast<size_t>(r - 2)));
  w.add(out.strides());
  for (int64_t bi = 0; bi < batches; ++bi, w.next()) {
    for (int64_t i = 0; i < rows; ++i) {
      // Zero bytes are zero in every dtype (0, +0.0, false).
      for (int64_t j = i + diag + 1 < 0 ? 0 : i + diag + 1; j < cols; ++j) {
        memset(o + static_cast<size_t>(w.off[0] + i * rs + j * cs) * e, 0, e);
      }
    }
  }
}

void unfold_copy_out(KernelContext& ctx, const Tensor& self, int64_t dimension, int64_t size, int64_t step,
                     Tensor& out) {
  const char* name = "unfold_copy.out";
  const int64_t d = wrap(dimension, self.dim());
  EMBER_KERNEL_CHECK(ctx, d >= 0 && self.dim() < kMaxTensorDim, InvalidArgument,
                     "%s: dimension %lld is out of range for a %d-d tensor", name, static_cast<long long>(dimension),
                     static_cast<int>(self.dim()));
  const int64_t n = self.dim() == 0 ? 1 : self.size(static_cast<int32_t>(d));
  EMBER_KERNEL_CHECK(ctx, size >= 0 && size <= n && step > 0, InvalidArgument,
                     "%s: size %lld must be in [0, %lld] and step %lld positive", name, static_cast<long long>(size),
                     static_cast<long long>(n), static_cast<long long>(step));
  StridedView v = view_of(self);
  if (self.dim() == 0) {
    v.insert(0, size, 1);
  } else {
    const int64_t st = v.strides[d];
    // A step past n - size leaves one window, as a step of n - size + 1 does: capped so the stride product
    // cannot overflow (kernel_fuzz: a step of 2^63 - 2).
    const int64_t capped = step > n - size ? n - size + 1 : step;
    v.sizes[d] = (n - size) / capped + 1;
    v.strides[d] = st * capped;
    v.insert(v.rank, size, st);
  }
  copy_view(ctx, name, self, v, out);
}

void view_as_real_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  const char* name = "view_as_real_copy.out";
  const ScalarType t = self.scalar_type();
  const bool complex = t == ScalarType::ComplexHalf || t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble;
  const ScalarType real = t == ScalarType::ComplexHalf    ? ScalarType::Half
                          : t == ScalarType::ComplexFloat ? ScalarType::Float
                                                          : ScalarType::Double;
  EMBER_KERNEL_CHECK(ctx, complex, InvalidArgument, "%s: self is %s, not a complex dtype", name, scalar_type_name(t));
  EMBER_KERNEL_CHECK(ctx, self.dim() < kMaxTensorDim && out.scalar_type() == real, InvalidArgument,
                     "%s: out is %s, must be %s", name, scalar_type_name(out.scalar_type()), scalar_type_name(real));
  int64_t sizes[kMaxTensorDim];
  for (int d = 0; d < self.dim(); ++d) sizes[d] = self.size(d);
  sizes[self.dim()] = 2;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(self.dim() + 1)), InvalidArgument,
                     "%s: out must have self's shape plus a last dim of 2", name);
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous() && out.is_contiguous(), NotSupported,
                     "%s: self and out must be contiguous", name);
  // (real, imaginary) pairs are the complex element's bytes.
  memmove(out.mutable_data_ptr(), self.const_data_ptr(), out.nbytes());
}

void h2d_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  // A CPU-only runtime: host and device memory are the same, so the transfer is a copy.
  copy_view(ctx, "et_copy::_h2d_copy.out", self, view_of(self), out);
}

void d2h_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  copy_view(ctx, "et_copy::_d2h_copy.out", self, view_of(self), out);
}

void empty_dim_order_out(KernelContext& ctx, ArrayRef<int64_t> size, Optional<ArrayRef<int64_t>> dim_order,
                         Tensor& out) {
  const char* name = "dim_order_ops::_empty_dim_order.out";
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "%s: out (rank %d) cannot take the %zu-d size", name, static_cast<int>(out.dim()), size.size());
  if (dim_order.has_value()) {
    const ArrayRef<int64_t> want = dim_order.value();
    bool same = want.size() == out.dim_order().size();
    for (size_t i = 0; same && i < want.size(); ++i) same = want[i] == out.dim_order()[i];
    EMBER_KERNEL_CHECK(ctx, same, InvalidArgument, "%s: dim_order differs from out's planned dim order", name);
  }
  // Empty: the contents are unspecified, so nothing is written.
}

}  // namespace portable
}  // namespace ember
