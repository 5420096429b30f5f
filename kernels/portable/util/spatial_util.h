// Geometry shared by the spatial kernel families (pooling, padding, upsampling, grid sampling, their backward
// passes): an NCHW view of a tensor through its strides, so contiguous and channels-last tensors run the same
// loops, and the pooling window arithmetic.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"

namespace ember {
namespace portable {

// A 3-d (CHW, N = 1) or 4-d tensor seen as NCHW; the strides are in elements and follow the dim order.
struct Nchw {
  int64_t N, C, H, W;
  int64_t sn, sc, sh, sw;
  int64_t at(int64_t n, int64_t c, int64_t h, int64_t w) const { return n * sn + c * sc + h * sh + w * sw; }
};
Nchw nchw_of(const Tensor& t);

// Whether `a` and `b` are both contiguous, or both 4-d channels-last (NHWC in memory): the dim orders the
// spatial kernels take.
bool same_spatial_dim_order(const Tensor& a, const Tensor& b);

struct PoolGeometry {
  int64_t batch, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

// ATen's pooling geometry for a 3-d or 4-d input (kernel, stride, padding, dilation lists of 0, 1 or 2 items);
// false when an argument is out of range or the output would be empty.
bool pool_geometry(const Tensor& in, ArrayRef<int64_t> k, ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                   ArrayRef<int64_t> d, bool ceil_mode, PoolGeometry* g);

// Whether `t` has the pooled shape ([batch,] C, OH, OW, rank as `in`); resizes a bounded one to it.
bool fit_pooled(Tensor& t, const Tensor& in, const PoolGeometry& g);

}  // namespace portable
}  // namespace ember
