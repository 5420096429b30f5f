// ember::winograd_conv2d for Float, NCHW, F(2x2, 3x3) or F(4x4, 3x3) (the filter's shape says which), in three
// passes over a chunk of tile rows at a time:
//  1. input transform, per input channel: the input rows of the chunk split by column modulo M (the tile's outputs
//     per side) make every tap of a whole vector of consecutive tiles one unit-stride load, across tile rows too;
//     V[point][channel][tile] is written a vector of tiles at a time;
//  2. one matrix product per point: M[point][tile][out] = sum over in of V[point][in][tile] * U[point][in][out].
//     Rows are tiles and columns output channels, so the register tile is full on any plane (a 28x28 output has 49
//     tiles, which as GEMM columns would fill four 16-float vectors 49/64 of the way), and the transformed filter
//     is read in place, a row of output channels at a time, as exir laid it out;
//  3. output transform, per tile and vector of output channels: bias, clamp, and each channel's M x M outputs
//     stored into its plane.
// Chunks of tile rows keep V and M (points x (in + out) floats per tile) within kChunkFloats, so they stay in L2
// between the passes; the filter is read once per chunk. Each pass splits over the method's threads (channels,
// points, tiles), and every value is computed the same way on any thread. Scratch is planned
// (winograd_conv2d_memory): the chunk's V and M, and a slice per thread for pass 1's split rows.
#include "compute/simd.h"
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/winograd.h"

namespace ember {
namespace optimized {
namespace {

using winograd::WinogradGeometry;

// Points per tile of the geometry's F(m x m, 3x3): 16 or 36.
int64_t points(const WinogradGeometry& g) { return (g.m + 2) * (g.m + 2); }

// V and M of one chunk: 2 MB, about what L2 holds beside the filter's rows in use.
constexpr int64_t kChunkFloats = int64_t{1} << 19;
// M's rows are padded to whole 16-float vectors, so every vector width's stores stay inside a row.
constexpr int64_t kRowAlign = 16;

// Between two points' blocks of V (and of M), 16 floats more than the block: otherwise the blocks' rows, whose sizes
// are often multiples of 4 KB, would all fall in the same L1 sets, and the input pass writes 16 or 36 rows at once.
constexpr int64_t kPointSkew = 16;

// The scratch of one chunk of `rows` tile rows: V [points][Cin][tiles] and M [points][tiles][ldm], each point's block
// point_v (point_m) floats after the previous one, then per thread a slice for the input pass (split_floats below).
struct ChunkPlan {
  int64_t rows, tiles, ldm, point_v, point_m, shared, slice;
};

// One slice: a zero-bordered input row, then the chunk's input rows split for the input pass, S[r][j][ti][tj] =
// padded input (M ti + r, M tj + j) for r < M, j < M + 2 and rows + 1 tile rows (a tile reads its next tile row's
// first two input rows, and its next tile column's first two input columns).
int64_t padded_row_floats(const WinogradGeometry& g) { return (g.m * g.tiles_w + 2 + 15) / 16 * 16; }
int64_t split_floats(const WinogradGeometry& g, int64_t rows) { return g.m * (g.m + 2) * (rows + 1) * g.tiles_w; }

ChunkPlan chunk_plan(const WinogradGeometry& g, int64_t rows) {
  ChunkPlan p;
  p.rows = rows, p.tiles = rows * g.tiles_w, p.ldm = (g.Cout + kRowAlign - 1) / kRowAlign * kRowAlign;
  p.point_v = g.Cin * p.tiles + kPointSkew;
  p.point_m = p.tiles * p.ldm + kPointSkew;
  p.shared = points(g) * (p.point_v + p.point_m);
  p.slice = (padded_row_floats(g) + split_floats(g, rows) + 15) / 16 * 16;
  return p;
}

// Tile rows per chunk as planned: V and M within kChunkFloats, at least one tile row, at most the plane.
int64_t planned_rows(const WinogradGeometry& g) {
  const int64_t per_row = points(g) * (g.Cin + (g.Cout + kRowAlign - 1) / kRowAlign * kRowAlign) * g.tiles_w;
  int64_t rows = per_row > 0 ? kChunkFloats / per_row : 1;
  if (rows < 1) rows = 1;
  return rows < g.tiles_h ? rows : g.tiles_h;
}

// Where everything of one call lives, and the chunk in progress.
struct Job {
  WinogradGeometry g;
  ChunkPlan plan;
  const float* x;     // this image's input [Cin, H, W]
  const float* u;     // the transformed filter [points, Cin, Cout]
  const float* bias;  // [Cout] or null
  float lo, hi;
  float* o;           // this image's output [Cout, OH, OW]
  float* v;           // V: point p, channel c, tile t at p * plan.point_v + c * tiles + t
  float* m;           // M: point p, tile t, output channel o at p * plan.point_m + t * plan.ldm + o
  int64_t row0;       // the chunk's first tile row
  int64_t tiles;      // tiles in the chunk: whole tile rows (fewer than plan.tiles in the last chunk)
};

// Pass 1's transform of the tiles [t, t + lanes of T), from the split rows: tap (i, j) of chunk tile t is
// S[i % M][j][i / M][0] + t, so a vector of consecutive tiles is one unit-stride load per tap, across tile rows too.
template <int M, class T>
EMBER_ALWAYS_INLINE void transform_tiles(const Job& job, const float* split, int64_t t, float* vc) {
  using F = winograd::Tile<M>;
  const int64_t tw = job.g.tiles_w, phase = (job.tiles / tw + 1) * tw;
  T d[F::kIn][F::kIn], out[F::kPoints];
  EMBER_UNROLL for (int i = 0; i < F::kIn; ++i) {
    EMBER_UNROLL for (int j = 0; j < F::kIn; ++j) {
      const float* src = split + ((i % M) * F::kIn + j) * phase + (i / M) * tw + t;
      if constexpr (sizeof(T) == sizeof(float)) {
        d[i][j] = *src;
      } else {
        d[i][j] = vload<T>(src);
      }
    }
  }
  F::input_tile(d, out);
  EMBER_UNROLL for (int p = 0; p < F::kPoints; ++p) {
    if constexpr (sizeof(T) == sizeof(float)) {
      vc[p * job.plan.point_v + t] = out[p];
    } else {
      vstore<T>(vc + p * job.plan.point_v + t, out[p]);
    }
  }
}

// Pass 1, for input channels [c0, c1): per channel, its rows of the chunk split (each copied once into a zero-
// bordered row, then read at stride M from each of the M + 2 column phases), then every tile of the chunk in
// vectors of L, of 4, then one by one.
template <class V, int M>
EMBER_ALWAYS_INLINE void input_pass(const Job& job, int64_t c0, int64_t c1, float* slice) {
  constexpr int64_t L = Lanes<V>::value;
  constexpr int kIn = M + 2;
  const WinogradGeometry& g = job.g;
  const int64_t tw = g.tiles_w, rows = job.tiles / tw, phase = (rows + 1) * tw, width = padded_row_floats(g);
  float* padded = slice;
  float* split = slice + width;
  for (int64_t c = c0; c < c1; ++c) {
    const float* plane = job.x + c * g.H * g.W;
    for (int64_t ti = 0; ti <= rows; ++ti) {
      for (int r = 0; r < M; ++r) {
        const int64_t y = (job.row0 + ti) * M + r - g.ph;
        for (int64_t k = 0; k < width; ++k) padded[k] = 0.0f;
        if (y >= 0 && y < g.H) memcpy(padded + g.pw, plane + y * g.W, static_cast<size_t>(g.W) * sizeof(float));
        for (int j = 0; j < kIn; ++j) {
          float* dst = split + (r * kIn + j) * phase + ti * tw;
          for (int64_t tj = 0; tj < tw; ++tj) dst[tj] = padded[M * tj + j];
        }
      }
    }
    float* vc = job.v + c * job.tiles;
    int64_t t = 0;
    for (; t + L <= job.tiles; t += L) transform_tiles<M, V>(job, split, t, vc);
    for (; t + 4 <= job.tiles; t += 4) transform_tiles<M, f32x4>(job, split, t, vc);
    for (; t < job.tiles; ++t) transform_tiles<M, float>(job, split, t, vc);
  }
}

// Pass 2's register tile: MR tiles x NV vectors of output channels. A (V's point) is stored channel-major, so the
// MR tiles' values of one input channel are adjacent; B is the filter's point, a row of output channels per input
// channel.
template <class V, int MR, int NV>
EMBER_ALWAYS_INLINE void product_tile(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t K, float* c,
                                      int64_t ldc) {
  constexpr int L = Lanes<V>::value;
  V acc[MR][NV];
  EMBER_UNROLL for (int r = 0; r < MR; ++r) { EMBER_UNROLL for (int v = 0; v < NV; ++v) acc[r][v] = V{}; }
  for (int64_t k = 0; k < K; ++k) {
    V bv[NV];
    EMBER_UNROLL for (int v = 0; v < NV; ++v) bv[v] = vload<V>(b + k * ldb + v * L);
    EMBER_UNROLL for (int r = 0; r < MR; ++r) {
      const V av = vsplat<V>(a[k * lda + r]);
      EMBER_UNROLL for (int v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
    }
  }
  EMBER_UNROLL for (int r = 0; r < MR; ++r) {
    EMBER_UNROLL for (int v = 0; v < NV; ++v) vstore<V>(c + r * ldc + v * L, acc[r][v]);
  }
}

// Tiles [t, t + rows) of one column panel: whole MR tiles, then 4, 2 and 1 (the compiled shapes stay few).
template <class V, int MR, int NV>
EMBER_ALWAYS_INLINE void product_rows(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t K, float* c,
                                      int64_t ldc, int64_t rows) {
  int64_t t = 0;
  for (; t + MR <= rows; t += MR) product_tile<V, MR, NV>(a + t, lda, b, ldb, K, c + t * ldc, ldc);
  if constexpr (MR > 4) {
    if (t + 4 <= rows) product_tile<V, 4, NV>(a + t, lda, b, ldb, K, c + t * ldc, ldc), t += 4;
  }
  if constexpr (MR > 2) {
    if (t + 2 <= rows) product_tile<V, 2, NV>(a + t, lda, b, ldb, K, c + t * ldc, ldc), t += 2;
  }
  for (; t < rows; ++t) product_tile<V, 1, NV>(a + t, lda, b, ldb, K, c + t * ldc, ldc);
}

// Pass 2 for one point: column panels of NV vectors (the filter's rows read once per panel while every tile passes
// over them), then single vectors, then the last few channels one by one.
template <class V, int MR, int NV>
EMBER_ALWAYS_INLINE void product_pass(const Job& job, int point) {
  constexpr int64_t L = Lanes<V>::value;
  const WinogradGeometry& g = job.g;
  const float* a = job.v + point * job.plan.point_v;
  const float* b = job.u + point * g.Cin * g.Cout;
  float* c = job.m + point * job.plan.point_m;
  const int64_t ldm = job.plan.ldm;
  int64_t n = 0;
  for (; n + NV * L <= g.Cout; n += NV * L) {
    product_rows<V, MR, NV>(a, job.tiles, b + n, g.Cout, g.Cin, c + n, ldm, job.tiles);
  }
  for (; n + L <= g.Cout; n += L) product_rows<V, MR, 1>(a, job.tiles, b + n, g.Cout, g.Cin, c + n, ldm, job.tiles);
  for (; n < g.Cout; ++n) {
    for (int64_t t = 0; t < job.tiles; ++t) {
      float s = 0.0f;
      for (int64_t k = 0; k < g.Cin; ++k) s += a[k * job.tiles + t] * b[k * g.Cout + n];
      c[t * ldm + n] = s;
    }
  }
}

// Pass 3 for tiles [t0, t1): per vector of output channels, A^T M A, bias and clamp in registers, then each
// channel's M x M (cut at the plane's edge) stored into its plane.
template <int M, class T>
EMBER_ALWAYS_INLINE void finish_tile(const Job& job, int64_t t, int64_t co, T bias, T lo, T hi, int64_t oy, int64_t ox,
                                     int64_t rows, int64_t cols) {
  using F = winograd::Tile<M>;
  constexpr int64_t L = sizeof(T) / sizeof(float);
  const WinogradGeometry& g = job.g;
  T mv[F::kPoints], y[M][M];
  for (int p = 0; p < F::kPoints; ++p) {
    const float* src = job.m + p * job.plan.point_m + t * job.plan.ldm + co;
    if constexpr (L == 1) {
      mv[p] = *src;
    } else {
      mv[p] = vload<T>(src);
    }
  }
  F::output_tile(mv, y);
  float out[M][M][L];
  EMBER_UNROLL for (int r = 0; r < M; ++r) {
    EMBER_UNROLL for (int c = 0; c < M; ++c) {
      T val = y[r][c] + bias;
      // NaN stays NaN, as in ATen: both comparisons are false for it.
      val = val < lo ? lo : val;
      val = val > hi ? hi : val;
      memcpy(out[r][c], &val, sizeof(T));
    }
  }
  const int64_t plane = g.OH * g.OW;
  for (int64_t l = 0; l < L; ++l) {
    float* dst = job.o + (co + l) * plane + oy * g.OW + ox;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) dst[r * g.OW + c] = out[r][c][l];
    }
  }
}

template <class V, int M>
EMBER_ALWAYS_INLINE void output_pass(const Job& job, int64_t t0, int64_t t1) {
  constexpr int64_t L = Lanes<V>::value;
  const WinogradGeometry& g = job.g;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t ti = job.row0 + t / g.tiles_w, tj = t % g.tiles_w;
    const int64_t oy = ti * M, ox = tj * M;
    const int64_t rows = g.OH - oy < M ? g.OH - oy : M, cols = g.OW - ox < M ? g.OW - ox : M;
    int64_t co = 0;
    for (; co + L <= g.Cout; co += L) {
      const V b = job.bias ? vload<V>(job.bias + co) : V{};
      finish_tile<M, V>(job, t, co, b, vsplat<V>(job.lo), vsplat<V>(job.hi), oy, ox, rows, cols);
    }
    for (; co < g.Cout; ++co) {
      finish_tile<M, float>(job, t, co, job.bias ? job.bias[co] : 0.0f, job.lo, job.hi, oy, ox, rows, cols);
    }
  }
}

// Each pass per instruction set and tile size: the templates above are always inlined into a function built for it.
#if defined(__aarch64__)
// 32 NEON registers: 8 tiles x 3 vectors (24 + 3 + 1).
#define EMBER_WINOGRAD_BASELINE_TILE 8, 3
#else
// 16 SSE registers: 4 tiles x 2 vectors (8 + 2 + 1); Cortex-M's 8 MVE registers would spill either way.
#define EMBER_WINOGRAD_BASELINE_TILE 4, 2
#endif

void product_baseline(const Job& j, int p) { product_pass<f32x4, EMBER_WINOGRAD_BASELINE_TILE>(j, p); }
#if EMBER_SIMD_X86_DISPATCH
// 16 AVX2 registers: 4 tiles x 3 vectors (12 + 3 + 1); 32 AVX-512 registers: 8 tiles x 3 vectors (24 + 3 + 1).
EMBER_TARGET_AVX2 void product_avx2(const Job& j, int p) { product_pass<f32x8, 4, 3>(j, p); }
EMBER_TARGET_AVX512 void product_avx512(const Job& j, int p) { product_pass<f32x16, 8, 3>(j, p); }
#endif

struct Passes {
  void (*input)(const Job&, int64_t, int64_t, float*);
  void (*product)(const Job&, int);
  void (*output)(const Job&, int64_t, int64_t);
};

template <int M>
struct Baseline {
  static void input(const Job& j, int64_t c0, int64_t c1, float* s) { input_pass<f32x4, M>(j, c0, c1, s); }
  static void output(const Job& j, int64_t t0, int64_t t1) { output_pass<f32x4, M>(j, t0, t1); }
  static constexpr Passes passes = {&input, &product_baseline, &output};
};

#if EMBER_SIMD_X86_DISPATCH
template <int M>
struct Avx2 {
  EMBER_TARGET_AVX2 static void input(const Job& j, int64_t c0, int64_t c1, float* s) {
    input_pass<f32x8, M>(j, c0, c1, s);
  }
  EMBER_TARGET_AVX2 static void output(const Job& j, int64_t t0, int64_t t1) { output_pass<f32x8, M>(j, t0, t1); }
  static constexpr Passes passes = {&input, &product_avx2, &output};
};

template <int M>
struct Avx512 {
  EMBER_TARGET_AVX512 static void input(const Job& j, int64_t c0, int64_t c1, float* s) {
    input_pass<f32x16, M>(j, c0, c1, s);
  }
  EMBER_TARGET_AVX512 static void output(const Job& j, int64_t t0, int64_t t1) { output_pass<f32x16, M>(j, t0, t1); }
  static constexpr Passes passes = {&input, &product_avx512, &output};
};
#endif

template <int M>
Passes passes_for() {
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx512f()) return Avx512<M>::passes;
  if (cpu_has_avx2_fma()) return Avx2<M>::passes;
#endif
  return Baseline<M>::passes;
}

// (The products do not depend on the tile size, only how many there are: both sizes share each instruction set's.)
Passes passes(int m) { return m == 2 ? passes_for<2>() : passes_for<4>(); }

// The chunk plan for the scratch at hand: planned_rows() tile rows, fewer while V, M and one slice do not fit (a
// method planned for a larger input runs a smaller one with the same rows or more); rows 0 if not even one does.
ChunkPlan fitting_plan(const WinogradGeometry& g, size_t scratch_bytes) {
  for (int64_t rows = planned_rows(g); rows >= 1; --rows) {
    const ChunkPlan p = chunk_plan(g, rows);
    if (static_cast<size_t>(p.shared + p.slice) * sizeof(float) <= scratch_bytes) return p;
  }
  return chunk_plan(g, 0);
}

void convolve(KernelContext& ctx, const WinogradGeometry& g, const ChunkPlan& plan, const float* x, const float* u,
              const float* bias, float lo, float hi, float* o) {
  const Passes run = passes(g.m);
  const int64_t count = points(g);
  ThreadPool* pool = ctx.threads();
  float* base = reinterpret_cast<float*>(ctx.scratch().data());
  Job job;
  job.g = g, job.plan = plan, job.u = u, job.bias = bias, job.lo = lo, job.hi = hi;
  job.v = base;
  job.m = base + count * plan.point_v;
  // Slices after the chunk's V and M, one per thread the scratch was planned for.
  float* slices = base + plan.shared;
  const int64_t threads = pool != nullptr ? pool->threads() : 1;
  int64_t parts = static_cast<int64_t>(ctx.scratch().size() / sizeof(float) - plan.shared) / plan.slice;
  if (parts > threads) parts = threads;
  if (parts > g.Cin) parts = g.Cin;
  for (int64_t n = 0; n < g.N; ++n) {
    job.x = x + n * g.Cin * g.H * g.W;
    job.o = o + n * g.Cout * g.OH * g.OW;
    for (int64_t r0 = 0; r0 < g.tiles_h; r0 += plan.rows) {
      job.row0 = r0;
      job.tiles = (g.tiles_h - r0 < plan.rows ? g.tiles_h - r0 : plan.rows) * g.tiles_w;
      parallel_for(pool, parts, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p)
          run.input(job, g.Cin * p / parts, g.Cin * (p + 1) / parts, slices + p * plan.slice);
      });
      parallel_for(pool, count, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) run.product(job, static_cast<int>(p));
      });
      const int64_t step = (job.tiles + 2 * threads - 1) / (2 * threads);
      parallel_for(pool, job.tiles, step, [&](int64_t t0, int64_t t1) { run.output(job, t0, t1); });
    }
  }
}

}  // namespace

KernelMemory winograd_conv2d_memory(const KernelArgs& a) {
  const size_t out = a.size() - 1;
  if (a.dtype(out) != ScalarType::Float ||
      !(selected_dtypes::winograd_conv2d_out_optimized & dtype_bit(ScalarType::Float))) {
    return portable::winograd_conv2d_memory(a);
  }
  WinogradGeometry g;
  int64_t pad[2];
  if (a.list_size(3) != 2) return {};
  for (size_t k = 0; k < 2; ++k) pad[k] = a.list_item(3, k);
  if (!winograd::winograd_geometry(a.sizes(0), a.sizes(1), ArrayRef<int64_t>(pad, 2), g)) return {};
  const ChunkPlan plan = chunk_plan(g, planned_rows(g));
  KernelMemory m;
  m.scratch = static_cast<size_t>(plan.shared + plan.slice) * sizeof(float);
  m.scratch_per_thread = static_cast<size_t>(plan.slice) * sizeof(float);
  return m;
}

void winograd_conv2d_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                         ArrayRef<int64_t> padding, double min, double max, Tensor& out) {
  if (!computes_float(selected_dtypes::winograd_conv2d_out_optimized, out)) {
    return portable::winograd_conv2d_out(ctx, input, weight, bias, padding, min, max, out);
  }
  WinogradGeometry g;
  if (!winograd::check_winograd_conv2d(ctx, input, weight, bias, padding, min, max, out, g)) return;
  const ChunkPlan plan = fitting_plan(g, ctx.scratch().size());
  // Without the planned scratch (a kernel test calling it directly), the portable loop, which needs far less.
  if (plan.rows < 1) return portable::winograd_conv2d_out(ctx, input, weight, bias, padding, min, max, out);
  convolve(ctx, g, plan, input.const_data_ptr<float>(), weight.const_data_ptr<float>(),
           bias ? bias->const_data_ptr<float>() : nullptr, static_cast<float>(min), static_cast<float>(max),
           out.mutable_data_ptr<float>());
}

}  // namespace optimized
}  // namespace ember
