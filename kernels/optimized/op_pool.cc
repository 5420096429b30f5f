// max_pool2d_with_indices for Float over contiguous NCHW, vectorized across output columns. ResNet's stem pool
// (3x3, stride 2, padding 1 over 64x112x112) took 7.5 ms of ResNet18's 66.5 ms in portable's per-window loop,
// most of it in mispredicted compares (perf: the `ja` after each ucomiss); eager's took 6.9 ms beside it.
// The windows are visited in ATen's order (rows, then columns in a row) with its test, `v > best || isnan(v)`,
// so values and indices match it exactly, ties and NaNs included. Other dtypes, dim orders and shapes whose plane
// passes 2^31 elements: portable.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/simd.h"
#include "compute/vec_math.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"

namespace ember {
namespace optimized {
namespace {

// L lanes from p, p + s, p + 2s, ...: stride 1 is one load; stride 2 (every ResNet-style stem) two loads and an
// even-lane shuffle, so it reads 2L floats from p.
template <class V, int S>
EMBER_ALWAYS_INLINE V load_strided(const float* p, int64_t s) {
  constexpr int L = Lanes<V>::value;
  if (S == 1) return vload<V>(p);
  if (S == 2) {
    const V a = vload<V>(p), b = vload<V>(p + L);
    if constexpr (L == 8) {
      return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    } else {
      return __builtin_shufflevector(a, b, 0, 2, 4, 6);
    }
  }
  V v;
  for (int l = 0; l < L; ++l) v[l] = p[l * s];
  return v;
}

// How far past a chunk's first column load_strided reads.
template <int L, int S>
int64_t load_extent(int64_t s) {
  return S == 2 ? 2 * L - 1 : (L - 1) * s;
}

// One output element, any window (padding included): portable's window, on floats.
EMBER_ALWAYS_INLINE void one_window(const float* xp, const portable::PoolGeometry& g, int64_t oh, int64_t ow, float* o,
                                    int64_t* ix) {
  portable::max_window(xp, g.W, 1, g, oh, ow, o, ix);
}

// L output columns from ow0, every window column inside the row; rows [kh0, kh1) are the ones inside the plane.
template <class V, int S>
EMBER_ALWAYS_INLINE void chunk(const float* xp, const portable::PoolGeometry& g, int64_t oh, int64_t ow0, int64_t kh0,
                               int64_t kh1, float* o, int64_t* ix) {
  typedef typename IntVec<V>::type I;
  constexpr int L = Lanes<V>::value;
  I lane;
  for (int l = 0; l < L; ++l) lane[l] = static_cast<int32_t>(l * g.SW);
  const int64_t iw0 = ow0 * g.SW - g.PW;
  const int64_t ih0 = oh * g.SH - g.PH + kh0 * g.DH;
  V best = load_strided<V, S>(xp + ih0 * g.W + iw0, g.SW);
  I best_i = lane + static_cast<int32_t>(ih0 * g.W + iw0);
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const int64_t row = (oh * g.SH - g.PH + kh * g.DH) * g.W;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t at = row + iw0 + kw * g.DW;
      const V v = load_strided<V, S>(xp + at, g.SW);
      const I take = (v > best) | (v != v);
      best = take ? v : best;
      best_i = take ? lane + static_cast<int32_t>(at) : best_i;
    }
  }
  vstore(o, best);
  for (int l = 0; l < L; ++l) ix[l] = best_i[l];
}

// The output rows of one plane: L-lane chunks, then half-width chunks where the wide one would read past the row,
// then single windows for the padded edges.
template <class V, class Vh, int S>
EMBER_ALWAYS_INLINE void plane(const float* xp, const portable::PoolGeometry& g, float* o, int64_t* ix) {
  constexpr int L = Lanes<V>::value, Lh = Lanes<Vh>::value;
  // The first column whose window starts inside the row.
  const int64_t ow_in = (g.PW + g.SW - 1) / g.SW;
  const int64_t span = g.PW - (g.KW - 1) * g.DW;  // a chunk at ow0 reads up to ow0 * SW - span + extent
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    int64_t kh0 = 0, kh1 = g.KH;
    while (kh0 < kh1 && oh * g.SH - g.PH + kh0 * g.DH < 0) ++kh0;
    while (kh1 > kh0 && oh * g.SH - g.PH + (kh1 - 1) * g.DH >= g.H) --kh1;
    float* orow = o + oh * g.OW;
    int64_t* irow = ix + oh * g.OW;
    int64_t ow = 0;
    if (kh0 < kh1) {
      for (; ow < ow_in && ow < g.OW; ++ow) one_window(xp, g, oh, ow, orow + ow, irow + ow);
      for (; ow + L <= g.OW && ow * g.SW - span + load_extent<L, S>(g.SW) < g.W; ow += L)
        chunk<V, S>(xp, g, oh, ow, kh0, kh1, orow + ow, irow + ow);
      for (; ow + Lh <= g.OW && ow * g.SW - span + load_extent<Lh, S>(g.SW) < g.W; ow += Lh)
        chunk<Vh, S>(xp, g, oh, ow, kh0, kh1, orow + ow, irow + ow);
    }
    for (; ow < g.OW; ++ow) one_window(xp, g, oh, ow, orow + ow, irow + ow);
  }
}

template <class V, class Vh>
EMBER_ALWAYS_INLINE void planes(const float* x, const portable::PoolGeometry& geometry, int64_t p0, int64_t p1,
                                float* o, int64_t* ix) {
  const portable::PoolGeometry g = geometry;  // a local copy: stores through ix (int64_t) cannot alias its fields
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  for (int64_t p = p0; p < p1; ++p) {
    const float* xp = x + p * in_plane;
    float* op = o + p * out_plane;
    int64_t* ip = ix + p * out_plane;
    if (g.SW == 1) {
      plane<V, Vh, 1>(xp, g, op, ip);
    } else if (g.SW == 2) {
      plane<V, Vh, 2>(xp, g, op, ip);
    } else {
      plane<V, Vh, 0>(xp, g, op, ip);
    }
  }
}

// Planes [p0, p1) (image-major: p = n * C + c).
void planes_baseline(const float* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, float* o, int64_t* ix) {
  planes<f32x4, f32x4>(x, g, p0, p1, o, ix);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void planes_avx2(const float* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, float* o,
                                   int64_t* ix) {
  planes<f32x8, f32x4>(x, g, p0, p1, o, ix);
}
#endif

}  // namespace

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  portable::PoolGeometry g;
  // Everything the portable kernel checks is checked there; here only whether this kernel's case applies.
  const bool mine = computes_float(selected_dtypes::max_pool2d_with_indices_out_optimized, self) &&
                    out.scalar_type() == ScalarType::Float && indices.scalar_type() == ScalarType::Long &&
                    self.is_contiguous() && out.is_contiguous() && indices.is_contiguous() &&
                    portable::pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g) &&
                    g.H * g.W <= INT32_MAX;
  if (!mine) {
    return portable::max_pool2d_with_indices_out(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                                                 indices);
  }
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, self, g) && portable::fit_pooled(indices, self, g), InvalidArgument,
                     "max_pool2d_with_indices.out: out and indices must be %lldx%lld per channel",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  int64_t* ix = indices.mutable_data_ptr<int64_t>();
  // Whole planes per thread, counted in output elements (each a window of compares).
  const int64_t out_plane = g.OH * g.OW;
  parallel_elements(ctx.threads(), g.batch * g.C * out_plane, out_plane, kSplitPlain / 4,
                    [&](int64_t begin, int64_t end) {
#if EMBER_SIMD_X86_DISPATCH
                      if (cpu_has_avx2_fma()) return planes_avx2(x, g, begin / out_plane, end / out_plane, o, ix);
#endif
                      planes_baseline(x, g, begin / out_plane, end / out_plane, o, ix);
                    });
}

}  // namespace optimized
}  // namespace ember
