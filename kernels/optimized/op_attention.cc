// ember_llm::sdpa_with_cache.out for Float: the portable kernel's loops (kernels/portable/op_attention.cc) with
// the head_dim dot products, the row's exp and the weighted sum of value rows as vector loops. Other dtypes go to
// the portable kernel; both share its checks and its scratch (one row of scores, one output row's sums). With a
// thread pool, the (token, head) rows are split between the threads, each on a scratch slice of its own.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
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

// Rows [r0, r1) of the output, row r = t * H + h (token t's head h).
template <class V>
EMBER_ALWAYS_INLINE void attend(const float* q, const float* k, const float* v, float* o, int64_t r0, int64_t r1,
                                int64_t H, int64_t KV, int64_t D, int64_t p, float scale, float* scores, float* acc) {
  constexpr int L = Lanes<V>::value;
  const int64_t group = H / KV;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t t = r / H, h = r % H;
    const int64_t visible = p + t + 1;
    const float* qr = q + r * D;
    const int64_t kv = h / group;
    float mx = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      scores[j] = dot<V>(qr, k + (j * KV + kv) * D, D) * scale;
      mx = scores[j] > mx ? scores[j] : mx;
    }
    V vs = vsplat<V>(0.0f);
    int64_t j = 0;
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
    int64_t d = 0;
    for (; d < D; ++d) acc[d] = 0.0f;
    for (j = 0; j < visible; ++j) {
      const float* vr = v + (j * KV + kv) * D;
      const V w = vsplat<V>(scores[j]);
      d = 0;
      for (; d + L <= D; d += L) vstore(acc + d, vload<V>(acc + d) + w * vload<V>(vr + d));
      for (; d < D; ++d) acc[d] += scores[j] * vr[d];
    }
    float* orow = o + r * D;
    const float inv = 1.0f / sum;
    d = 0;
    for (; d + L <= D; d += L) vstore(orow + d, vload<V>(acc + d) * inv);
    for (; d < D; ++d) orow[d] = acc[d] * inv;
  }
}

void attend_baseline(const float* q, const float* k, const float* v, float* o, int64_t r0, int64_t r1, int64_t H,
                     int64_t KV, int64_t D, int64_t p, float scale, float* scores, float* acc) {
  attend<f32x4>(q, k, v, o, r0, r1, H, KV, D, p, scale, scores, acc);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void attend_avx2(const float* q, const float* k, const float* v, float* o, int64_t r0, int64_t r1,
                                   int64_t H, int64_t KV, int64_t D, int64_t p, float scale, float* scores,
                                   float* acc) {
  attend<f32x8>(q, k, v, o, r0, r1, H, KV, D, p, scale, scores, acc);
}
#endif

}  // namespace

// The portable kernel's memory, so a call handed to it has its scratch too (kernels/README.md: the first
// library's memory function covers the dtypes it hands on), in whole 16-byte lines, and the same again for each
// thread beyond the first: every thread attends its rows with a score row of its own.
KernelMemory sdpa_with_cache_memory(const KernelArgs& args) {
  KernelMemory m = portable::sdpa_with_cache_memory(args);
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
      const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
#if EMBER_SIMD_X86_DISPATCH
      if (cpu_has_avx2_fma()) {
        attend_avx2(q, k, v, o, r0, r1, H, KV, D, p, sc, scores, scores + S);
        continue;
      }
#endif
      attend_baseline(q, k, v, o, r0, r1, H, KV, D, p, sc, scores, scores + S);
    }
  });
}

}  // namespace optimized
}  // namespace ember
