// ember_llm::sdpa_with_int8_cache.out (schema/operators.yaml): portable's loops (op_attention_int8_cache.cc) with the
// head_dim dot products, the row's exp and the weighted sum of value rows as vector loops; int8 cache rows are
// widened to float lanes as they are loaded (one vector of int8 per vector of floats), so the cache is read at a
// byte a value and never dequantized into memory. AVX-512F, AVX2+FMA (x86-64, chosen at run time) and the target's
// 4-lane vectors otherwise; the checks and the scratch (one row of scores, one output row's sums) are portable's.
// With a thread pool the (token, head) rows are split between the threads, each on a scratch slice of its own.
#include <math.h>
#include <string.h>

#include "compute/parallel.h"
#include "compute/simd.h"
#include "compute/vec_math.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

typedef int8_t i8x4 __attribute__((vector_size(4)));
typedef int8_t i8x8 __attribute__((vector_size(8)));
typedef int8_t i8x16 __attribute__((vector_size(16)));

// The int8 vector with as many lanes as V.
template <class V>
struct Int8Lanes;
template <>
struct Int8Lanes<f32x4> {
  using type = i8x4;
};
template <>
struct Int8Lanes<f32x8> {
  using type = i8x8;
};
template <>
struct Int8Lanes<f32x16> {
  using type = i8x16;
};

// Lanes<V> int8 values at p as floats (a sign-extending load and a conversion on x86 and NEON).
template <class V>
EMBER_ALWAYS_INLINE V vload_i8(const int8_t* p) {
  typename Int8Lanes<V>::type b;
  memcpy(&b, p, sizeof(b));
  return __builtin_convertvector(b, V);
}

template <class V>
EMBER_ALWAYS_INLINE float hsum(V v) {
  float s = 0.0f;
  for (int k = 0; k < Lanes<V>::value; ++k) s += v[k];
  return s;
}

// sum_d q[d] * k[d], k int8: two chains, so a long head_dim is not one dependent chain of adds.
template <class V>
EMBER_ALWAYS_INLINE float dot_i8(const float* q, const int8_t* k, int64_t n) {
  constexpr int L = Lanes<V>::value;
  V a0 = vsplat<V>(0.0f), a1 = vsplat<V>(0.0f);
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    a0 += vload<V>(q + i) * vload_i8<V>(k + i);
    a1 += vload<V>(q + i + L) * vload_i8<V>(k + i + L);
  }
  for (; i + L <= n; i += L) a0 += vload<V>(q + i) * vload_i8<V>(k + i);
  float s = hsum<V>(a0 + a1);
  for (; i < n; ++i) s += q[i] * static_cast<float>(k[i]);
  return s;
}

struct Int8Cache {
  const int8_t* k;
  const float* ks;
  const int8_t* v;
  const float* vs;
  int64_t KV;
};

// Rows [r0, r1) of the output, row r = t * H + h (token t's head h).
template <class V>
EMBER_ALWAYS_INLINE void attend_i8(const float* q, const Int8Cache& c, float* o, int64_t r0, int64_t r1, int64_t H,
                                   int64_t D, int64_t p, float scale, float* scores, float* acc) {
  constexpr int L = Lanes<V>::value;
  const int64_t KV = c.KV, group = H / KV;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t t = r / H, h = r % H;
    const int64_t visible = p + t + 1;
    const float* qr = q + r * D;
    const int64_t kv = h / group;
    float mx = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      scores[j] = dot_i8<V>(qr, c.k + (j * KV + kv) * D, D) * c.ks[j * KV + kv] * scale;
      mx = scores[j] > mx ? scores[j] : mx;
    }
    V vsum = vsplat<V>(0.0f);
    int64_t j = 0;
    for (; j + L <= visible; j += L) {
      const V e = vexp(vload<V>(scores + j) - mx);
      vstore(scores + j, e);
      vsum += e;
    }
    float sum = hsum<V>(vsum);
    for (; j < visible; ++j) {
      scores[j] = vexp(vsplat<V>(scores[j] - mx))[0];
      sum += scores[j];
    }
    int64_t d = 0;
    for (; d < D; ++d) acc[d] = 0.0f;
    for (j = 0; j < visible; ++j) {
      const int8_t* vr = c.v + (j * KV + kv) * D;
      // The value row's scale folded into its softmax weight: one multiply per row, not per element.
      const float wj = scores[j] * c.vs[j * KV + kv];
      const V w = vsplat<V>(wj);
      d = 0;
      for (; d + L <= D; d += L) vstore(acc + d, vload<V>(acc + d) + w * vload_i8<V>(vr + d));
      for (; d < D; ++d) acc[d] += wj * static_cast<float>(vr[d]);
    }
    float* orow = o + r * D;
    const float inv = 1.0f / sum;
    d = 0;
    for (; d + L <= D; d += L) vstore(orow + d, vload<V>(acc + d) * inv);
    for (; d < D; ++d) orow[d] = acc[d] * inv;
  }
}

void attend_i8_baseline(const float* q, const Int8Cache& c, float* o, int64_t r0, int64_t r1, int64_t H, int64_t D,
                        int64_t p, float scale, float* scores, float* acc) {
  attend_i8<f32x4>(q, c, o, r0, r1, H, D, p, scale, scores, acc);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void attend_i8_avx2(const float* q, const Int8Cache& c, float* o, int64_t r0, int64_t r1, int64_t H,
                                      int64_t D, int64_t p, float scale, float* scores, float* acc) {
  attend_i8<f32x8>(q, c, o, r0, r1, H, D, p, scale, scores, acc);
}
EMBER_TARGET_AVX512 void attend_i8_avx512(const float* q, const Int8Cache& c, float* o, int64_t r0, int64_t r1,
                                          int64_t H, int64_t D, int64_t p, float scale, float* scores, float* acc) {
  attend_i8<f32x16>(q, c, o, r0, r1, H, D, p, scale, scores, acc);
}
#endif

void attend_rows(const float* q, const Int8Cache& c, float* o, int64_t r0, int64_t r1, int64_t H, int64_t D, int64_t p,
                 float scale, float* scores, float* acc) {
#if EMBER_SIMD_X86_DISPATCH
  // 512-bit vectors only when a row has 16 lanes' worth of head_dim to fill them.
  if (D >= 16 && cpu_has_avx512f()) return attend_i8_avx512(q, c, o, r0, r1, H, D, p, scale, scores, acc);
  if (cpu_has_avx2_fma()) return attend_i8_avx2(q, c, o, r0, r1, H, D, p, scale, scores, acc);
#endif
  attend_i8_baseline(q, c, o, r0, r1, H, D, p, scale, scores, acc);
}

}  // namespace

// Portable's memory in whole 16-byte lines, and the same again for each thread beyond the first: every thread
// attends its rows with a score row of its own.
KernelMemory sdpa_with_int8_cache_memory(const KernelArgs& args) {
  KernelMemory m = portable::sdpa_with_int8_cache_memory(args);
  m.scratch = round16(m.scratch);
  m.scratch_per_thread = m.scratch;
  return m;
}

void sdpa_with_int8_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache,
                              const Tensor& key_scales, const Tensor& value_cache, const Tensor& value_scales,
                              const Tensor& input_pos, double scale, Tensor& out) {
  int64_t p = 0;
  if (!portable::sdpa_with_int8_cache_checks(ctx, query, key_cache, key_scales, value_cache, value_scales, input_pos,
                                             out, &p)) {
    return;
  }
  const int64_t T = query.size(1), H = query.size(2), D = query.size(3);
  const int64_t S = key_cache.size(1);
  const size_t need = static_cast<size_t>(S + D) * sizeof(float);
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= need, MemoryAllocationFailed,
                     "ember_llm::sdpa_with_int8_cache.out: %zu bytes of scratch, needs %zu", ctx.scratch().size(),
                     need);
  const Int8Cache c{key_cache.const_data_ptr<int8_t>(), key_scales.const_data_ptr<float>(),
                    value_cache.const_data_ptr<int8_t>(), value_scales.const_data_ptr<float>(), key_cache.size(2)};
  const float* q = query.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  const float sc = static_cast<float>(scale);
  // Rows split into one part per scratch slice (per thread), when each part has enough multiply-adds to pay for
  // waking a thread: a row costs about 2 x visible x head_dim of them.
  const size_t slice = round16(need);
  const int64_t rows = T * H;
  int64_t parts = ctx.scratch_slices(slice);
  const int64_t work = rows * (p + T) * D;
  const int64_t worth = work / kSplitPlain > 1 ? work / kSplitPlain : 1;
  parts = parts < 1 ? 1 : parts;
  parts = parts < worth ? parts : worth;
  parts = parts < rows ? parts : rows;
  uint8_t* base = ctx.scratch().data();
  parallel_for(ctx.threads(), parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      float* scores = reinterpret_cast<float*>(base + part * slice);
      attend_rows(q, c, o, rows * part / parts, rows * (part + 1) / parts, H, D, p, sc, scores, scores + S);
    }
  });
}

}  // namespace optimized
}  // namespace ember
