// index.Tensor: ATen advanced indexing with integer index tensors (None keeps a dim). The index tensors
// broadcast together; their result dims go where the indexed dims were when those are adjacent, else first.
// Boolean masks give data-dependent shapes, which a statically planned program cannot hold: refused.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

void index_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices, Tensor& out) {
  const int rank = self.dim();
  EMBER_KERNEL_CHECK(ctx, static_cast<int>(indices.size()) <= rank, InvalidArgument,
                     "index.Tensor_out: %zu indices for a %d-d tensor", indices.size(), rank);
  int32_t bshape[kMaxTensorDim];
  int bdim = 0, first = -1, last = -1, count = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor* t = indices[k];
    if (t == nullptr) continue;
    EMBER_KERNEL_CHECK(ctx, t->scalar_type() == ScalarType::Long || t->scalar_type() == ScalarType::Int, NotSupported,
                       "index.Tensor_out: index %zu is %s; only Long and Int indices are supported "
                       "(boolean masks give data-dependent shapes)",
                       k, scalar_type_name(t->scalar_type()));
    if (count == 0) {
      bdim = t->dim();
      for (int d = 0; d < bdim; ++d) bshape[d] = t->size(d);
    } else {
      int32_t next[kMaxTensorDim];
      bdim = broadcast_shape(ArrayRef<int32_t>(bshape, static_cast<size_t>(bdim)), t->sizes(), next);
      EMBER_KERNEL_CHECK(ctx, bdim >= 0, InvalidArgument, "index.Tensor_out: index tensors do not broadcast");
      memcpy(bshape, next, sizeof(int32_t) * static_cast<size_t>(bdim));
    }
    if (first < 0) first = static_cast<int>(k);
    last = static_cast<int>(k);
    ++count;
  }
  EMBER_KERNEL_CHECK(ctx, count > 0, InvalidArgument, "index.Tensor_out: all indices are None");
  bool adjacent = true;
  for (int k = first; k <= last; ++k) adjacent = adjacent && indices[static_cast<size_t>(k)] != nullptr;
  // Output layout: [prefix dims][broadcast dims][suffix dims], where prefix are the non-indexed dims before
  // `first` when adjacent (none otherwise) and suffix the remaining non-indexed dims.
  int32_t shape[kMaxTensorDim];
  int src_dim_of[kMaxTensorDim];  // output dim -> self dim, or -1 for a broadcast dim
  int r = 0;
  const int insert_at = adjacent ? first : 0;
  for (int d = 0; d < insert_at; ++d) {
    shape[r] = self.size(d);
    src_dim_of[r++] = d;
  }
  const int bstart = r;
  EMBER_KERNEL_CHECK(ctx, r + bdim + rank <= kMaxTensorDim + rank, InvalidArgument, "index.Tensor_out: too many dims");
  for (int d = 0; d < bdim; ++d) {
    shape[r] = bshape[d];
    src_dim_of[r++] = -1;
  }
  for (int d = insert_at; d < rank; ++d) {
    const bool indexed = d < static_cast<int>(indices.size()) && indices[static_cast<size_t>(d)] != nullptr;
    if (indexed) continue;
    EMBER_KERNEL_CHECK(ctx, r < kMaxTensorDim, InvalidArgument, "index.Tensor_out: result has too many dims");
    shape[r] = self.size(d);
    src_dim_of[r++] = d;
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(r)) && out.scalar_type() == self.scalar_type(),
                     InvalidArgument, "index.Tensor_out: out has the wrong shape or dtype");
  const size_t elem = self.element_size();
  const uint8_t* x = static_cast<const uint8_t*>(self.const_data_ptr());
  uint8_t* o = static_cast<uint8_t*>(out.mutable_data_ptr());
  int64_t coord[kMaxTensorDim] = {0};
  for (int64_t i = 0; i < out.numel(); ++i) {
    // Row-major position within the broadcast dims, for reading each index tensor.
    int64_t bpos = 0;
    for (int d = 0; d < bdim; ++d) bpos = bpos * bshape[d] + coord[bstart + d];
    int64_t src = 0;
    for (int d = 0; d < r; ++d) {
      if (src_dim_of[d] >= 0) src += coord[d] * self.strides()[static_cast<size_t>(src_dim_of[d])];
    }
    for (size_t k = 0; k < indices.size(); ++k) {
      const Tensor* t = indices[k];
      if (t == nullptr) continue;
      const BroadcastIndexer bi(t->sizes(), bshape, bdim);
      int64_t v = load_as<int64_t>(t->const_data_ptr(), t->scalar_type(), bi(bpos));
      const int64_t size = self.size(static_cast<int32_t>(k));
      if (v < 0) v += size;
      EMBER_KERNEL_CHECK(ctx, v >= 0 && v < size, InvalidArgument,
                         "index.Tensor_out: index %lld is out of bounds "
                         "for dim %zu of size %lld",
                         static_cast<long long>(v), k, static_cast<long long>(size));
      src += v * self.strides()[k];
    }
    memmove(o + static_cast<size_t>(i) * elem, x + static_cast<size_t>(src) * elem, elem);
    for (int d = r - 1; d >= 0; --d) {
      if (++coord[d] < shape[d]) break;
      coord[d] = 0;
    }
  }
}

}  // namespace portable
}  // namespace ember
