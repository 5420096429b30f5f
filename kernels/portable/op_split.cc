// Ops whose result is a list of tensors: split_copy, split_with_sizes_copy, unbind_copy. Each writes consecutive
// pieces of `self` along one dim into the tensors of `out` (a Tensor[] out argument). The pieces are byte copies,
// so no dtype dispatch: every dtype costs the same code, and the registration mask alone decides which load.
#include <string.h>

#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// Copies self's elements [start, start + count) along dim `d` into `out` (contiguous), whatever self's dim order:
// self is walked by its strides, out written in row-major order. Rows along the innermost dim are one memcpy when
// self is contiguous there.
void copy_piece(const Tensor& self, int d, int64_t start, int64_t count, Tensor& out) {
  const int rank = self.dim();
  const int64_t elem = static_cast<int64_t>(self.element_size());
  int64_t sizes[kMaxTensorDim] = {0}, strides[kMaxTensorDim] = {0};
  for (int i = 0; i < rank; ++i) {
    sizes[i] = i == d ? count : self.size(i);
    strides[i] = self.strides()[static_cast<size_t>(i)];
  }
  const uint8_t* in = static_cast<const uint8_t*>(self.const_data_ptr()) + start * strides[d] * elem;
  uint8_t* o = static_cast<uint8_t*>(out.mutable_data_ptr());
  int64_t total = 1;
  for (int i = 0; i < rank; ++i) total *= sizes[i];
  if (total == 0) return;
  if (rank == 0) {
    memmove(o, in, static_cast<size_t>(elem));
    return;
  }
  const int64_t inner = sizes[rank - 1];
  const int64_t istride = strides[rank - 1];
  const int64_t rows = total / inner;
  int64_t coord[kMaxTensorDim] = {0};
  int64_t src = 0;  // element offset of the current row in `in`
  for (int64_t row = 0; row < rows; ++row) {
    const uint8_t* s = in + src * elem;
    if (istride == 1) {
      memmove(o, s, static_cast<size_t>(inner * elem));
    } else {
      for (int64_t i = 0; i < inner; ++i) memmove(o + i * elem, s + i * istride * elem, static_cast<size_t>(elem));
    }
    o += inner * elem;
    for (int k = rank - 2; k >= 0; --k) {
      src += strides[k];
      if (++coord[k] < sizes[k]) break;
      src -= strides[k] * sizes[k];
      coord[k] = 0;
    }
  }
}

// Checks that out[i] can hold piece i (`count(i)` elements of self along dim d; without that dim when
// `drop_dim`), then copies every piece. `op` names the operator in messages.
template <class Count>
void split_pieces(KernelContext& ctx, const char* op, const Tensor& self, int64_t d, size_t n, Count count,
                  bool drop_dim, TensorList out) {
  const int rank = self.dim();
  const int64_t len = self.size(static_cast<int32_t>(d));
  EMBER_KERNEL_CHECK(ctx, out.size() == n, InvalidArgument, "%s: %zu pieces but out holds %zu tensors", op, n,
                     out.size());
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t c = count(i);
    EMBER_KERNEL_CHECK(ctx, c >= 0 && c <= len - sum, InvalidArgument,
                       "%s: piece %zu of size %lld does not fit in dim %lld of size %lld after %lld elements", op, i,
                       static_cast<long long>(c), static_cast<long long>(d), static_cast<long long>(len),
                       static_cast<long long>(sum));
    sum += c;
    Tensor piece = out[i];
    int64_t sizes[kMaxTensorDim];
    int r = 0;
    for (int k = 0; k < rank; ++k) {
      if (k == d && drop_dim) continue;
      sizes[r++] = k == d ? c : self.size(k);
    }
    EMBER_KERNEL_CHECK(ctx, piece.scalar_type() == self.scalar_type(), InvalidArgument,
                       "%s: out[%zu] is %s, self is %s", op, i, scalar_type_name(piece.scalar_type()),
                       scalar_type_name(self.scalar_type()));
    EMBER_KERNEL_CHECK(ctx, fit_output(piece, sizes, static_cast<size_t>(r)), InvalidArgument,
                       "%s: out[%zu] has the wrong shape (rank %d; piece %zu has %lld elements along dim %lld)", op, i,
                       static_cast<int>(piece.dim()), i, static_cast<long long>(c), static_cast<long long>(d));
    EMBER_KERNEL_CHECK(ctx, piece.is_contiguous(), InvalidArgument, "%s: out[%zu] is not contiguous", op, i);
  }
  EMBER_KERNEL_CHECK(ctx, sum == len, InvalidArgument,
                     "%s: the pieces cover %lld elements of dim %lld, which has "
                     "%lld",
                     op, static_cast<long long>(sum), static_cast<long long>(d), static_cast<long long>(len));
  int64_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    Tensor piece = out[i];
    copy_piece(self, static_cast<int>(d), start, count(i), piece);
    start += count(i);
  }
}

// `dim` wrapped into [0, rank) in *d; false when out of range (a 0-dim tensor has no dim to split).
bool valid_dim(const Tensor& self, int64_t dim, int64_t* d) {
  *d = dim < 0 ? dim + self.dim() : dim;
  return self.dim() > 0 && *d >= 0 && *d < self.dim();
}

}  // namespace

void split_copy_tensor_out(KernelContext& ctx, const Tensor& self, int64_t split_size, int64_t dim, TensorList out) {
  int64_t d = 0;
  EMBER_KERNEL_CHECK(ctx, valid_dim(self, dim, &d), InvalidArgument,
                     "split_copy.Tensor_out: dim %lld out of "
                     "range for a tensor of rank %d",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  const int64_t len = self.size(static_cast<int32_t>(d));
  // ATen: ceil(len / split_size) pieces, the last one shorter; one empty piece for an empty dim.
  EMBER_KERNEL_CHECK(ctx, split_size > 0 || (split_size == 0 && len == 0), InvalidArgument,
                     "split_copy.Tensor_out: split_size %lld must be positive", static_cast<long long>(split_size));
  // (len - 1) / size + 1, not (len + size - 1) / size: a huge split_size must not overflow.
  const size_t n = len == 0 ? 1 : static_cast<size_t>((len - 1) / split_size + 1);
  split_pieces(
      ctx, "split_copy.Tensor_out", self, d, n,
      [&](size_t i) {
        const int64_t begin = static_cast<int64_t>(i) * split_size;
        return len - begin < split_size ? len - begin : split_size;
      },
      false, out);
}

void split_with_sizes_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> split_sizes, int64_t dim,
                               TensorList out) {
  int64_t d = 0;
  EMBER_KERNEL_CHECK(ctx, valid_dim(self, dim, &d), InvalidArgument,
                     "split_with_sizes_copy.out: dim %lld out "
                     "of range for a tensor of rank %d",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  split_pieces(
      ctx, "split_with_sizes_copy.out", self, d, split_sizes.size(), [&](size_t i) { return split_sizes[i]; }, false,
      out);
}

void unbind_copy_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, TensorList out) {
  int64_t d = 0;
  EMBER_KERNEL_CHECK(ctx, valid_dim(self, dim, &d), InvalidArgument,
                     "unbind_copy.int_out: dim %lld out of "
                     "range for a tensor of rank %d",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  split_pieces(
      ctx, "unbind_copy.int_out", self, d, static_cast<size_t>(self.size(static_cast<int32_t>(d))),
      [](size_t) { return int64_t{1}; }, true, out);
}

}  // namespace portable
}  // namespace ember
