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
bool pool_geometry(const Tensor& in, ArrayRef<int64_t> k, ArrayRef<int64_t> s, ArrayRef<int64_t> p, ArrayRef<int64_t> d,
                   bool ceil_mode, PoolGeometry* g);

// Max pooling's one window at (oh, ow) of a plane read at x[ih * sh + iw * sw]: ATen's order (rows, then columns)
// and test (`v > best || isnan(v)`), so the first of equal values wins and a NaN propagates. `index` is ih * W + iw
// in the plane whatever the dim order; a window wholly in the padding gives value 0 and index -1.
template <typename C, typename T>
inline void max_window(const T* x, int64_t sh, int64_t sw, const PoolGeometry& g, int64_t oh, int64_t ow, C* value,
                       int64_t* index) {
  C best = C(0);
  int64_t best_i = -1;
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t ih = oh * g.SH - g.PH + kh * g.DH;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t iw = ow * g.SW - g.PW + kw * g.DW;
      if (iw < 0 || iw >= g.W) continue;
      const C v = static_cast<C>(x[ih * sh + iw * sw]);
      if (best_i < 0 || v > best || v != v) {
        best = v;
        best_i = ih * g.W + iw;
      }
    }
  }
  *value = best;
  *index = best_i;
}

// Whether `t` has the pooled shape ([batch,] C, OH, OW, rank as `in`); resizes a bounded one to it.
bool fit_pooled(Tensor& t, const Tensor& in, const PoolGeometry& g);

}  // namespace portable
}  // namespace ember
