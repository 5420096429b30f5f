#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

int broadcast_shape(ArrayRef<int32_t> a, ArrayRef<int32_t> b, int32_t* out_sizes) {
  const int na = static_cast<int>(a.size()), nb = static_cast<int>(b.size());
  const int n = na > nb ? na : nb;
  if (n > kMaxTensorDim) return -1;
  for (int i = 0; i < n; ++i) {
    const int32_t da = i < n - na ? 1 : a[static_cast<size_t>(i - (n - na))];
    const int32_t db = i < n - nb ? 1 : b[static_cast<size_t>(i - (n - nb))];
    if (da != db && da != 1 && db != 1) return -1;
    out_sizes[i] = da == 1 ? db : da;
  }
  return n;
}

BroadcastIndexer::BroadcastIndexer(ArrayRef<int32_t> in, const int32_t* out, int out_dim) : dim(out_dim) {
  const int nin = static_cast<int>(in.size());
  int64_t stride = 1;
  for (int d = out_dim - 1; d >= 0; --d) {
    out_sizes[d] = out[d];
    const int k = d - (out_dim - nin);
    const int32_t size = k >= 0 ? in[static_cast<size_t>(k)] : 1;
    in_strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

BroadcastIndexer::BroadcastIndexer(ArrayRef<int32_t> in, ArrayRef<int32_t> strides, const int32_t* out, int out_dim)
    : dim(out_dim) {
  const int nin = static_cast<int>(in.size());
  for (int d = out_dim - 1; d >= 0; --d) {
    out_sizes[d] = out[d];
    const int k = d - (out_dim - nin);
    const int32_t size = k >= 0 ? in[static_cast<size_t>(k)] : 1;
    in_strides[d] = size == 1 || k < 0 ? 0 : strides[static_cast<size_t>(k)];
  }
}

bool same_shape(const Tensor& a, const Tensor& b) { return a.sizes().equals(b.sizes()); }

}  // namespace portable
}  // namespace ember
