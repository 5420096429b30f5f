// max_pool2d_with_indices for Float over contiguous NCHW, vectorized across output columns; and ember::max_pool2d,
// the same windows without indices (exir's opt-in fuse_activations emits it where nothing reads them). ResNet's stem pool
// (3x3, stride 2, padding 1 over 64x112x112) took 7.5 ms of ResNet18's 66.5 ms in portable's per-window loop,
// most of it in mispredicted compares (perf: the `ja` after each ucomiss); eager's took 6.9 ms beside it.
// The windows are visited in ATen's order (rows, then columns in a row) with its test, `v > best || isnan(v)`,
// so values and indices match it exactly, ties and NaNs included. Int8 (the quantized programs' pools, which keep
// int8 values) runs the same windows on int32 lanes: ResNet18 int8's stem pool was a fifth of its time in
// portable's loop. Other dtypes, dim orders and shapes whose plane passes 2^31 elements: portable.
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

// (i32x4, i32x8: compute/vec_math.h.)
typedef int8_t i8x4 __attribute__((vector_size(4)));
typedef int8_t i8x8 __attribute__((vector_size(8)));
typedef int8_t i8x16 __attribute__((vector_size(16)));

typedef int64_t i64x4 __attribute__((vector_size(32)));
typedef int64_t i64x8 __attribute__((vector_size(64)));

// The indices of a chunk's lanes, widened to int64 as one vector conversion: one lane at a time, the stores were
// most of a chunk's cost.
EMBER_ALWAYS_INLINE void store_indices(int64_t* ix, i32x4 i) {
  const i64x4 w = __builtin_convertvector(i, i64x4);
  memcpy(ix, &w, sizeof(w));
}
EMBER_ALWAYS_INLINE void store_indices(int64_t* ix, i32x8 i) {
  const i64x8 w = __builtin_convertvector(i, i64x8);
  memcpy(ix, &w, sizeof(w));
}

typedef int16_t i16x4 __attribute__((vector_size(8)));
typedef int16_t i16x8 __attribute__((vector_size(16)));

// N int16 lanes.
template <int N>
struct Words;
template <>
struct Words<4> {
  typedef i16x4 type;
};
template <>
struct Words<8> {
  typedef i16x8 type;
};

// N int8 lanes (gcc takes no template-dependent vector_size).
template <int N>
struct Bytes;
template <>
struct Bytes<4> {
  typedef i8x4 type;
};
template <>
struct Bytes<8> {
  typedef i8x8 type;
};
template <>
struct Bytes<16> {
  typedef i8x16 type;
};

// The comparison masks of a lane vector.
template <class V>
struct MaskOf {
  typedef typename IntVec<V>::type type;
};
template <>
struct MaskOf<i32x4> {
  typedef i32x4 type;
};
template <>
struct MaskOf<i32x8> {
  typedef i32x8 type;
};

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

// The same for int8 values, widened to int32 lanes. Stride 2 reads 2L bytes as L little-endian int16 pairs and
// keeps each pair's low byte by shifting it up and back down (sign-extending it): a byte shuffle of generic vectors
// became an element-by-element build in gcc's code.
template <class V, int S>
EMBER_ALWAYS_INLINE V load_strided(const int8_t* p, int64_t s) {
  constexpr int L = Lanes<V>::value;
  typedef typename Bytes<L>::type Lane8;
  if (S == 2) {
    typedef typename Words<L>::type Lane16;
    Lane16 w;
    memcpy(&w, p, 2 * L);
    w = (w << 8) >> 8;
    return __builtin_convertvector(w, V);
  }
  Lane8 b;
  if (S == 1) {
    memcpy(&b, p, L);
  } else {
    for (int l = 0; l < L; ++l) b[l] = p[l * s];
  }
  return __builtin_convertvector(b, V);
}

EMBER_ALWAYS_INLINE void store_lanes(float* o, f32x4 v) { vstore(o, v); }
EMBER_ALWAYS_INLINE void store_lanes(float* o, f32x8 v) { vstore(o, v); }
template <class V>
EMBER_ALWAYS_INLINE void store_lanes(int8_t* o, V v) {
  constexpr int L = Lanes<V>::value;
  typedef typename Bytes<L>::type Lane8;
  const Lane8 b = __builtin_convertvector(v, Lane8);
  memcpy(o, &b, L);
}

// How far past a chunk's first column load_strided reads.
template <int L, int S>
int64_t load_extent(int64_t s) {
  return S == 2 ? 2 * L - 1 : (L - 1) * s;
}

// One output element, any window (padding included): portable's window. ix null: no index wanted.
template <class T>
EMBER_ALWAYS_INLINE void one_window(const T* xp, const portable::PoolGeometry& g, int64_t oh, int64_t ow, T* o,
                                    int64_t* ix) {
  int64_t unused;
  portable::max_window(xp, g.W, 1, g, oh, ow, o, ix != nullptr ? ix : &unused);
}

// L output columns from ow0, every window column inside the row; rows [kh0, kh1) are the ones inside the plane.
// Without Indices (ember::max_pool2d, whose program reads no indices) the same compares pick the value alone.
template <class V, int S, bool Indices, class T>
EMBER_ALWAYS_INLINE void chunk(const T* xp, const portable::PoolGeometry& g, int64_t oh, int64_t ow0, int64_t kh0,
                               int64_t kh1, T* o, int64_t* ix) {
  typedef typename MaskOf<V>::type I;
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
      if constexpr (Indices) best_i = take ? lane + static_cast<int32_t>(at) : best_i;
    }
  }
  store_lanes(o, best);
  if constexpr (Indices) store_indices(ix, best_i);
}

// The output rows of one plane: L-lane chunks, then half-width chunks where the wide one would read past the row,
// then single windows for the padded edges.
template <class V, class Vh, int S, bool Indices, class T>
EMBER_ALWAYS_INLINE void plane(const T* xp, const portable::PoolGeometry& g, T* o, int64_t* ix) {
  constexpr int L = Lanes<V>::value, Lh = Lanes<Vh>::value;
  // The first column whose window starts inside the row.
  const int64_t ow_in = (g.PW + g.SW - 1) / g.SW;
  const int64_t span = g.PW - (g.KW - 1) * g.DW;  // a chunk at ow0 reads up to ow0 * SW - span + extent
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    int64_t kh0 = 0, kh1 = g.KH;
    while (kh0 < kh1 && oh * g.SH - g.PH + kh0 * g.DH < 0) ++kh0;
    while (kh1 > kh0 && oh * g.SH - g.PH + (kh1 - 1) * g.DH >= g.H) --kh1;
    T* orow = o + oh * g.OW;
    int64_t* irow = Indices ? ix + oh * g.OW : nullptr;
    int64_t ow = 0;
    if (kh0 < kh1) {
      for (; ow < ow_in && ow < g.OW; ++ow) one_window(xp, g, oh, ow, orow + ow, Indices ? irow + ow : nullptr);
      for (; ow + L <= g.OW && ow * g.SW - span + load_extent<L, S>(g.SW) < g.W; ow += L)
        chunk<V, S, Indices>(xp, g, oh, ow, kh0, kh1, orow + ow, Indices ? irow + ow : nullptr);
      for (; ow + Lh <= g.OW && ow * g.SW - span + load_extent<Lh, S>(g.SW) < g.W; ow += Lh)
        chunk<Vh, S, Indices>(xp, g, oh, ow, kh0, kh1, orow + ow, Indices ? irow + ow : nullptr);
    }
    for (; ow < g.OW; ++ow) one_window(xp, g, oh, ow, orow + ow, Indices ? irow + ow : nullptr);
  }
}

template <class V, class Vh, class T, bool Indices = true>
EMBER_ALWAYS_INLINE void planes(const T* x, const portable::PoolGeometry& geometry, int64_t p0, int64_t p1, T* o,
                                int64_t* ix) {
  const portable::PoolGeometry g = geometry;  // a local copy: stores through ix (int64_t) cannot alias its fields
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * in_plane;
    T* op = o + p * out_plane;
    int64_t* ip = Indices ? ix + p * out_plane : nullptr;
    if (g.SW == 1) {
      plane<V, Vh, 1, Indices>(xp, g, op, ip);
    } else if (g.SW == 2) {
      plane<V, Vh, 2, Indices>(xp, g, op, ip);
    } else {
      plane<V, Vh, 0, Indices>(xp, g, op, ip);
    }
  }
}

// Planes [p0, p1) (image-major: p = n * C + c).
void planes_baseline(const float* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, float* o, int64_t* ix) {
  planes<f32x4, f32x4>(x, g, p0, p1, o, ix);
}
void planes_baseline(const int8_t* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, int8_t* o, int64_t* ix) {
  planes<i32x4, i32x4>(x, g, p0, p1, o, ix);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void planes_avx2(const float* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, float* o,
                                   int64_t* ix) {
  planes<f32x8, f32x4>(x, g, p0, p1, o, ix);
}
EMBER_TARGET_AVX2 void planes_avx2(const int8_t* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, int8_t* o,
                                   int64_t* ix) {
  planes<i32x8, i32x4>(x, g, p0, p1, o, ix);
}
#endif

// The values alone (ember::max_pool2d), Float: the same windows. (Not on AVX-512: gcc 12 builds the compare-and-
// select of 16 lanes one lane at a time without AVX512DQ's mask moves; that took 6.3 ms for ResNet18's stem pool.)
void values_baseline(const float* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, float* o) {
  planes<f32x4, f32x4, float, false>(x, g, p0, p1, o, nullptr);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void values_avx2(const float* x, const portable::PoolGeometry& g, int64_t p0, int64_t p1, float* o) {
  planes<f32x8, f32x4, float, false>(x, g, p0, p1, o, nullptr);
}
#endif

template <class T>
void run_planes(KernelContext& ctx, const portable::PoolGeometry& g, const T* x, T* o, int64_t* ix) {
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

}  // namespace

void max_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool ceil_mode, Tensor& out) {
  portable::PoolGeometry g;
  // Everything the portable kernel checks is checked there; here only whether this kernel's case applies.
  const bool mine = computes_float(selected_dtypes::max_pool2d_out_optimized, self) &&
                    out.scalar_type() == ScalarType::Float && self.is_contiguous() && out.is_contiguous() &&
                    portable::pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g) &&
                    g.H * g.W <= INT32_MAX;
  if (!mine) return portable::max_pool2d_out(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out);
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, self, g), InvalidArgument,
                     "max_pool2d.out: out must be %lldx%lld per channel", static_cast<long long>(g.OH),
                     static_cast<long long>(g.OW));
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  const int64_t out_plane = g.OH * g.OW;
  parallel_elements(ctx.threads(), g.batch * g.C * out_plane, out_plane, kSplitPlain / 4,
                    [&](int64_t begin, int64_t end) {
#if EMBER_SIMD_X86_DISPATCH
                      if (cpu_has_avx2_fma()) return values_avx2(x, g, begin / out_plane, end / out_plane, o);
#endif
                      values_baseline(x, g, begin / out_plane, end / out_plane, o);
                    });
}

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  portable::PoolGeometry g;
  constexpr uint32_t kMask = selected_dtypes::max_pool2d_with_indices_out_optimized;
  const bool is_float = computes_float(kMask, self) && out.scalar_type() == ScalarType::Float;
  const bool is_char = self.scalar_type() == ScalarType::Char && (kMask & dtype_bit(ScalarType::Char)) &&
                       out.scalar_type() == ScalarType::Char;
  // Everything the portable kernel checks is checked there; here only whether this kernel's case applies.
  const bool mine = (is_float || is_char) && indices.scalar_type() == ScalarType::Long && self.is_contiguous() &&
                    out.is_contiguous() && indices.is_contiguous() &&
                    portable::pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g) &&
                    g.H * g.W <= INT32_MAX;
  if (!mine) {
    return portable::max_pool2d_with_indices_out(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                                                 indices);
  }
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, self, g) && portable::fit_pooled(indices, self, g), InvalidArgument,
                     "max_pool2d_with_indices.out: out and indices must be %lldx%lld per channel",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  int64_t* ix = indices.mutable_data_ptr<int64_t>();
  if (is_char) return run_planes(ctx, g, self.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(), ix);
  run_planes(ctx, g, self.const_data_ptr<float>(), out.mutable_data_ptr<float>(), ix);
}

}  // namespace optimized
}  // namespace ember
