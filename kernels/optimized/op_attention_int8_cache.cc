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

#if EMBER_SIMD_X86_DISPATCH && !defined(__clang__)
#include <immintrin.h>
#endif

namespace ember {
namespace optimized {
namespace {

struct Int8Cache {
  const int8_t* k;
  const float* ks;
  const int8_t* v;
  const float* vs;
  int64_t KV;
};

// The rows' loops (attention_int8_cache.inc) once per instruction set, each in a namespace of its own: an
// intrinsic only inlines into a function built for its set, and a template cannot carry a target attribute per
// instantiation. On x86 the int8 lanes are widened by the sign-extending conversion instructions: gcc builds
// __builtin_convertvector from int8 one lane at a time there (a movsbl and a vcvtsi2ss per value).
namespace baseline {
typedef int8_t i8x4 __attribute__((vector_size(4)));
EMBER_ALWAYS_INLINE f32x4 widen_i8(const int8_t* p) {
  i8x4 b;
  memcpy(&b, p, sizeof(b));
  return __builtin_convertvector(b, f32x4);
}
#define EMBER_KV8_TARGET
#define EMBER_KV8_V f32x4
#include "kernels/optimized/attention_int8_cache.inc"
#undef EMBER_KV8_TARGET
#undef EMBER_KV8_V
}  // namespace baseline
// clang refuses the 32- and 64-byte vectors that vsplat, vload and vexp (built for the baseline) would pass to and
// from an AVX2 or AVX-512 function, where gcc inlines them; and intrinsics need a caller built for their set. So
// builds with clang (the sanitizer and fuzz configs, macOS) run the 4-lane rows.
#if EMBER_SIMD_X86_DISPATCH && !defined(__clang__)
#define EMBER_KV8_X86 1
namespace avx2 {
EMBER_TARGET_AVX2 EMBER_ALWAYS_INLINE f32x8 widen_i8(const int8_t* p) {
  return (f32x8)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
#define EMBER_KV8_TARGET EMBER_TARGET_AVX2
#define EMBER_KV8_V f32x8
#include "kernels/optimized/attention_int8_cache.inc"
#undef EMBER_KV8_TARGET
#undef EMBER_KV8_V
}  // namespace avx2
namespace avx512 {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // gcc 12's avx512fintrin.h, as in op_llm_linear.cc
EMBER_TARGET_AVX512 EMBER_ALWAYS_INLINE f32x16 widen_i8(const int8_t* p) {
  return (f32x16)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
#define EMBER_KV8_TARGET EMBER_TARGET_AVX512
#define EMBER_KV8_V f32x16
#include "kernels/optimized/attention_int8_cache.inc"
#undef EMBER_KV8_TARGET
#undef EMBER_KV8_V
#pragma GCC diagnostic pop
}  // namespace avx512
#endif

void attend_rows(const float* q, const Int8Cache& c, float* o, int64_t r0, int64_t r1, int64_t H, int64_t D, int64_t p,
                 float scale, float* scores, float* acc) {
#if defined(EMBER_KV8_X86)
  // 512-bit vectors only when a row has 16 lanes' worth of head_dim to fill them.
  if (D >= 16 && cpu_has_avx512f()) return avx512::attend(q, c, o, r0, r1, H, D, p, scale, scores, acc);
  if (cpu_has_avx2_fma()) return avx2::attend(q, c, o, r0, r1, H, D, p, scale, scores, acc);
#endif
  baseline::attend(q, c, o, r0, r1, H, D, p, scale, scores, acc);
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
