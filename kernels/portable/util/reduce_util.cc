#include "kernels/portable/util/reduce_util.h"

namespace ember {
namespace portable {

int64_t wrap_dim(int64_t dim, int64_t rank) {
  const int64_t n = rank > 0 ? rank : 1;
  if (dim < -n || dim >= n) return -1;
  return dim < 0 ? dim + n : dim;
}

bool make_reduce_plan(const Tensor& in, const int64_t* dims, size_t ndims, bool none_means_all, bool keepdim,
                      ReducePlan& plan) {
  const int32_t rank = in.dim();
  bool reduced[kMaxTensorDim] = {false};
  if (ndims == 0 && none_means_all) {
    for (int32_t d = 0; d < rank; ++d) reduced[d] = true;
  }
  for (size_t k = 0; k < ndims; ++k) {
    const int64_t d = wrap_dim(dims[k], rank);
    if (d < 0) return false;
    // A 0-dim input has no dim to mark: dim 0 reduces its single element.
    if (rank == 0) continue;
    if (reduced[d]) return false;
    reduced[d] = true;
  }
  plan = ReducePlan();
  int64_t stride = 1;
  int64_t strides[kMaxTensorDim];
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= in.size(d);
  }
  for (int32_t d = 0; d < rank; ++d) {
    const int32_t s = in.size(d);
    if (reduced[d]) {
      plan.reduced_sizes[plan.nreduced] = s;
      plan.reduced_strides[plan.nreduced++] = strides[d];
      plan.reduced_numel *= s;
      if (keepdim) plan.out_shape[plan.out_rank++] = 1;
    } else {
      plan.kept_sizes[plan.nkept] = s;
      plan.kept_strides[plan.nkept++] = strides[d];
      plan.out_numel *= s;
      plan.out_shape[plan.out_rank++] = s;
    }
  }
  return true;
}

}  // namespace portable
}  // namespace ember
