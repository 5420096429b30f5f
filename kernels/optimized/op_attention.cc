// ember_llm::sdpa_with_cache.out for Float. Decode (few query tokens): the portable kernel's loops
// (kernels/portable/op_attention.cc) with the head_dim dot products, the row's exp and the weighted sum of value rows
// as vector loops. Prefill (kTileTokens tokens or more): per head and tile of query tokens, the scores are one matrix
// product with the keys transposed into scratch and the output another with the value rows in place, so every key
// and value row loaded feeds a tile of queries instead of one (a row at a time spent a tenth of SmolLM-135M's 8da4w
// prefill summing each dot product's lanes). Other dtypes go to the portable kernel; all share its checks. With a
// thread pool, rows (decode) or (head, tile) units (prefill) are split between the threads, each on a scratch slice
// of its own.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/gemm.h"
#include "compute/parallel.h"
#include "compute/vec_math.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

template <class V>
EMBER_ALWAYS_INLINE float dot(const float* a, const float* b, int64_t n) {
  constexpr int L = Lanes<V>::value;
  V acc = vsplat<V>(0.0f);
  int64_t i = 0;
  for (; i + L <= n; i += L) acc += vload<V>(a + i) * vload<V>(b + i);
  float s = 0.0f;
  for (int k = 0; k < L; ++k) s += acc[k];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// The lane sums of four vectors, as one 4-lane vector {sum(a), sum(b), sum(c), sum(d)}: pairwise shuffles and adds,
// so four dot products share one reduction instead of paying a lane-by-lane sum each.
EMBER_ALWAYS_INLINE f32x4 sum_lanes4(f32x4 a, f32x4 b, f32x4 c, f32x4 d) {
  const f32x4 ab = __builtin_shufflevector(a, b, 0, 2, 4, 6) + __builtin_shufflevector(a, b, 1, 3, 5, 7);
  const f32x4 cd = __builtin_shufflevector(c, d, 0, 2, 4, 6) + __builtin_shufflevector(c, d, 1, 3, 5, 7);
  return __builtin_shufflevector(ab, cd, 0, 2, 4, 6) + __builtin_shufflevector(ab, cd, 1, 3, 5, 7);
}
EMBER_ALWAYS_INLINE f32x4 sum_lanes4(f32x8 a, f32x8 b, f32x8 c, f32x8 d) {
  const f32x4 lo_a = __builtin_shufflevector(a, a, 0, 1, 2, 3), hi_a = __builtin_shufflevector(a, a, 4, 5, 6, 7);
  const f32x4 lo_b = __builtin_shufflevector(b, b, 0, 1, 2, 3), hi_b = __builtin_shufflevector(b, b, 4, 5, 6, 7);
  const f32x4 lo_c = __builtin_shufflevector(c, c, 0, 1, 2, 3), hi_c = __builtin_shufflevector(c, c, 4, 5, 6, 7);
  const f32x4 lo_d = __builtin_shufflevector(d, d, 0, 1, 2, 3), hi_d = __builtin_shufflevector(d, d, 4, 5, 6, 7);
  return sum_lanes4(lo_a + hi_a, lo_b + hi_b, lo_c + hi_c, lo_d + hi_d);
}

// Scores of keys [j, j + 4) for one query row: four dot products over head_dim side by side, one reduction.
template <class V>
EMBER_ALWAYS_INLINE f32x4 dot4(const float* qr, const float* k0, int64_t stride, int64_t D) {
  constexpr int L = Lanes<V>::value;
  V a0 = vsplat<V>(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t d = 0;
  for (; d + L <= D; d += L) {
    const V qv = vload<V>(qr + d);
    a0 += qv * vload<V>(k0 + d);
    a1 += qv * vload<V>(k0 + stride + d);
    a2 += qv * vload<V>(k0 + 2 * stride + d);
    a3 += qv * vload<V>(k0 + 3 * stride + d);
  }
  f32x4 tail = {0.0f, 0.0f, 0.0f, 0.0f};
  for (; d < D; ++d) {
    const f32x4 kd = {k0[d], k0[stride + d], k0[2 * stride + d], k0[3 * stride + d]};
    tail += qr[d] * kd;
  }
  return sum_lanes4(a0, a1, a2, a3) + tail;
}

// orow[d] = inv * sum_j w[j] * value row j's element d, for d in [d0, d0 + C * L): C vectors of sums held in
// registers across all the value rows, so each row's slice is loaded once and no partial sum goes to memory.
template <class V, int C>
EMBER_ALWAYS_INLINE void weighted_rows(const float* w, const float* v0, int64_t stride, int64_t n, int64_t d0,
                                       float inv, float* orow) {
  constexpr int L = Lanes<V>::value;
  V acc[C];
  EMBER_UNROLL
  for (int c = 0; c < C; ++c) acc[c] = vsplat<V>(0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const V wj = vsplat<V>(w[j]);
    const float* vr = v0 + j * stride + d0;
    EMBER_UNROLL
    for (int c = 0; c < C; ++c) acc[c] += wj * vload<V>(vr + c * L);
  }
  EMBER_UNROLL
  for (int c = 0; c < C; ++c) vstore(orow + d0 + c * L, acc[c] * inv);
}

// Rows [r0, r1) of the output, row r = t * H + h (token t's head h).
template <class V>
EMBER_ALWAYS_INLINE void attend(const float* q, const float* k, const float* v, float* o, int64_t r0, int64_t r1,
                                int64_t H, int64_t KV, int64_t D, int64_t p, float scale, float* scores) {
  constexpr int L = Lanes<V>::value;
  const int64_t group = H / KV, stride = KV * D;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t t = r / H, h = r % H;
    const int64_t visible = p + t + 1;
    const float* qr = q + r * D;
    const int64_t kv = h / group;
    const float* k0 = k + kv * D;
    f32x4 mx4 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t j = 0;
    for (; j + 4 <= visible; j += 4) {
      const f32x4 s4 = dot4<V>(qr, k0 + j * stride, stride, D) * scale;
      vstore(scores + j, s4);
      mx4 = mx4 > s4 ? mx4 : s4;
    }
    float mx = -INFINITY;
    for (int l = 0; l < 4; ++l) mx = mx4[l] > mx ? mx4[l] : mx;
    for (; j < visible; ++j) {
      scores[j] = dot<V>(qr, k0 + j * stride, D) * scale;
      mx = scores[j] > mx ? scores[j] : mx;
    }
    V vs = vsplat<V>(0.0f);
    j = 0;
    for (; j + L <= visible; j += L) {
      const V e = vexp(vload<V>(scores + j) - mx);
      vstore(scores + j, e);
      vs += e;
    }
    float sum = 0.0f;
    for (int k2 = 0; k2 < L; ++k2) sum += vs[k2];
    for (; j < visible; ++j) {
      scores[j] = vexp(vsplat<V>(scores[j] - mx))[0];
      sum += scores[j];
    }
    float* orow = o + r * D;
    const float inv = 1.0f / sum;
    const float* v0 = v + kv * D;
    int64_t d = 0;
    for (; d + 4 * L <= D; d += 4 * L) weighted_rows<V, 4>(scores, v0, stride, visible, d, inv, orow);
    for (; d + L <= D; d += L) weighted_rows<V, 1>(scores, v0, stride, visible, d, inv, orow);
    for (; d < D; ++d) {
      float a = 0.0f;
      for (j = 0; j < visible; ++j) a += scores[j] * v0[j * stride + d];
      orow[d] = a * inv;
    }
  }
}

void attend_baseline(const float* q, const float* k, const float* v, float* o, int64_t r0, int64_t r1, int64_t H,
                     int64_t KV, int64_t D, int64_t p, float scale, float* scores) {
  attend<f32x4>(q, k, v, o, r0, r1, H, KV, D, p, scale, scores);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void attend_avx2(const float* q, const float* k, const float* v, float* o, int64_t r0, int64_t r1,
                                   int64_t H, int64_t KV, int64_t D, int64_t p, float scale, float* scores) {
  attend<f32x8>(q, k, v, o, r0, r1, H, KV, D, p, scale, scores);
}
#endif

// --- prefill: tiles of query tokens as matrix products ---------------------------------------------------------

// Query tokens per tile: enough rows to fill the product's register tiles, few enough that a tile's scores (tokens x
// keys) stay in L2 at long contexts.
constexpr int64_t kTileTokens = 32;

// Scratch floats of one prefill unit: the keys transposed (head_dim x keys) and the tile's scores (tokens x keys).
int64_t tile_scratch_floats(int64_t S, int64_t D) { return D * S + kTileTokens * S; }

// Each row i of the scores (keys [0, visible0 + i) visible, the causal limit) turned into softmax weights in place,
// the keys past the limit set to 0 so the product with the value rows can run over the tile's whole width.
template <class V>
EMBER_ALWAYS_INLINE void softmax_rows(float* s, int64_t rows, int64_t keys, int64_t visible0) {
  constexpr int L = Lanes<V>::value;
  for (int64_t i = 0; i < rows; ++i) {
    float* r = s + i * keys;
    const int64_t visible = visible0 + i;
    float mx = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) mx = r[j] > mx ? r[j] : mx;
    V vs = vsplat<V>(0.0f);
    int64_t j = 0;
    for (; j + L <= visible; j += L) {
      const V e = vexp(vload<V>(r + j) - mx);
      vstore(r + j, e);
      vs += e;
    }
    float sum = 0.0f;
    for (int k2 = 0; k2 < L; ++k2) sum += vs[k2];
    for (; j < visible; ++j) {
      r[j] = vexp(vsplat<V>(r[j] - mx))[0];
      sum += r[j];
    }
    const V inv = vsplat<V>(1.0f / sum);
    j = 0;
    for (; j + L <= visible; j += L) vstore(r + j, vload<V>(r + j) * inv);
    for (; j < visible; ++j) r[j] *= inv[0];
    for (j = visible; j < keys; ++j) r[j] = 0.0f;
  }
}

// Units [u0, u1), unit u = head h's tile of query tokens: u = h * tiles + tile. `kt` and `s` are this part's scratch.
template <class V>
EMBER_ALWAYS_INLINE void attend_tiles(const float* q, const float* k, const float* v, float* o, int64_t u0, int64_t u1,
                                      int64_t T, int64_t H, int64_t KV, int64_t D, int64_t p, float scale, float* kt,
                                      float* s) {
  const int64_t tiles = (T + kTileTokens - 1) / kTileTokens, group = H / KV;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t h = u / tiles, t0 = (u % tiles) * kTileTokens;
    const int64_t rows = T - t0 < kTileTokens ? T - t0 : kTileTokens;
    const int64_t kv = h / group, keys = p + t0 + rows;  // the tile's last token sees every key before it
    // Keys transposed: kt[d][j] = key j's element d, so the scores' product reads them as rows.
    for (int64_t j = 0; j < keys; ++j) {
      const float* kr = k + (j * KV + kv) * D;
      for (int64_t d = 0; d < D; ++d) kt[d * keys + j] = kr[d];
    }
    Gemm scores;
    scores.M = rows, scores.N = keys, scores.K = D;
    scores.a = q + (t0 * H + h) * D, scores.lda = H * D;
    scores.b = kt, scores.ldb = keys;
    scores.c = s, scores.ldc = keys;
    scores.alpha = scale;
    sgemm(scores);
    softmax_rows<V>(s, rows, keys, p + t0 + 1);
    Gemm out;
    out.M = rows, out.N = D, out.K = keys;
    out.a = s, out.lda = keys;
    out.b = v + kv * D, out.ldb = KV * D;
    out.c = o + (t0 * H + h) * D, out.ldc = H * D;
    sgemm(out);
  }
}

void attend_tiles_baseline(const float* q, const float* k, const float* v, float* o, int64_t u0, int64_t u1, int64_t T,
                           int64_t H, int64_t KV, int64_t D, int64_t p, float scale, float* kt, float* s) {
  attend_tiles<f32x4>(q, k, v, o, u0, u1, T, H, KV, D, p, scale, kt, s);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void attend_tiles_avx2(const float* q, const float* k, const float* v, float* o, int64_t u0,
                                         int64_t u1, int64_t T, int64_t H, int64_t KV, int64_t D, int64_t p,
                                         float scale, float* kt, float* s) {
  attend_tiles<f32x8>(q, k, v, o, u0, u1, T, H, KV, D, p, scale, kt, s);
}
#endif

// Splits n units of `work` multiply-adds each into at most `slices` parts worth waking a thread for.
int64_t parts_for(int64_t n, int64_t work, int64_t slices) {
  const int64_t worth = work / kSplitPlain > 1 ? work / kSplitPlain : 1;
  int64_t parts = slices < 1 ? 1 : slices;
  parts = parts < worth ? parts : worth;
  return parts < n ? parts : n;
}

// Prefill as (head, tile) units, each part on its own scratch slice of `slice` bytes.
void prefill(KernelContext& ctx, const float* q, const float* k, const float* v, float* o, int64_t T, int64_t H,
             int64_t KV, int64_t D, int64_t S, int64_t p, float sc, size_t slice) {
  const int64_t units = H * ((T + kTileTokens - 1) / kTileTokens);
  const int64_t parts = parts_for(units, 2 * T * H * (p + T) * D, ctx.scratch_slices(slice));
  uint8_t* base = ctx.scratch().data();
  parallel_for(ctx.threads(), parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      float* kt = reinterpret_cast<float*>(base + part * slice);
      float* s = kt + D * S;
      const int64_t u0 = units * part / parts, u1 = units * (part + 1) / parts;
#if EMBER_SIMD_X86_DISPATCH
      if (cpu_has_avx2_fma()) {
        attend_tiles_avx2(q, k, v, o, u0, u1, T, H, KV, D, p, sc, kt, s);
        continue;
      }
#endif
      attend_tiles_baseline(q, k, v, o, u0, u1, T, H, KV, D, p, sc, kt, s);
    }
  });
}

}  // namespace

// The portable kernel's memory, so a call handed to it has its scratch too (kernels/README.md: the first
// library's memory function covers the dtypes it hands on), in whole 16-byte lines, and the same again for each
// thread beyond the first: every thread attends its rows with a score row of its own.
KernelMemory sdpa_with_cache_memory(const KernelArgs& args) {
  KernelMemory m = portable::sdpa_with_cache_memory(args);
  const ArrayRef<int32_t> query = args.sizes(0), cache = args.sizes(1);
  // A program whose query tokens reach a tile (at their bound) may prefill: the tile's scratch instead when larger.
  if (m.scratch > 0 && args.dtype(0) == ScalarType::Float && query[1] >= kTileTokens) {
    const size_t tile = static_cast<size_t>(tile_scratch_floats(cache[1], query[3])) * sizeof(float);
    m.scratch = tile > m.scratch ? tile : m.scratch;
  }
  m.scratch = round16(m.scratch);
  m.scratch_per_thread = m.scratch;
  return m;
}

void sdpa_with_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                         const Tensor& input_pos, double scale, Tensor& out) {
  if (!computes_float(selected_dtypes::sdpa_with_cache_out_optimized, query)) {
    return portable::sdpa_with_cache_out(ctx, query, key_cache, value_cache, input_pos, scale, out);
  }
  int64_t p = 0;
  if (!portable::sdpa_with_cache_checks(ctx, query, key_cache, value_cache, input_pos, out, &p)) return;
  const int64_t T = query.size(1), H = query.size(2), D = query.size(3);
  const int64_t S = key_cache.size(1), KV = key_cache.size(2);
  const size_t need = static_cast<size_t>(S + D) * sizeof(float);
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= need, MemoryAllocationFailed,
                     "ember_llm::sdpa_with_cache.out: %zu bytes of scratch, needs %zu", ctx.scratch().size(), need);
  const float* q = query.const_data_ptr<float>();
  const float* k = key_cache.const_data_ptr<float>();
  const float* v = value_cache.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  const float sc = static_cast<float>(scale);
  if (T >= kTileTokens) {
    const size_t tile = round16(static_cast<size_t>(tile_scratch_floats(S, D)) * sizeof(float));
    EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= tile, MemoryAllocationFailed,
                       "ember_llm::sdpa_with_cache.out: %zu bytes of scratch, prefill of %lld tokens needs %zu",
                       ctx.scratch().size(), static_cast<long long>(T), tile);
    return prefill(ctx, q, k, v, o, T, H, KV, D, S, p, sc, tile);
  }
  // Rows split into one part per scratch slice (per thread), when each part has enough multiply-adds to pay for
  // waking a thread: a row costs about 2 x visible x head_dim of them.
  const size_t slice = round16(need);
  const int64_t rows = T * H;
  const int64_t parts = parts_for(rows, rows * (p + T) * D, ctx.scratch_slices(slice));
  uint8_t* base = ctx.scratch().data();
  parallel_for(ctx.threads(), parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      float* scores = reinterpret_cast<float*>(base + part * slice);
      const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
#if EMBER_SIMD_X86_DISPATCH
      if (cpu_has_avx2_fma()) {
        attend_avx2(q, k, v, o, r0, r1, H, KV, D, p, sc, scores);
        continue;
      }
#endif
      attend_baseline(q, k, v, o, r0, r1, H, KV, D, p, sc, scores);
    }
  });
}

}  // namespace optimized
}  // namespace ember
