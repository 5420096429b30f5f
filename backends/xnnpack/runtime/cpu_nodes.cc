#include "backends/xnnpack/runtime/cpu_nodes.h"

#include <math.h>
#include <string.h>

#include "compute/gemm.h"
#include "compute/simd.h"
#include "compute/vec_math.h"

namespace ember {
namespace xnnpack {
namespace {

using optimized::Lanes;
using optimized::vload;
using optimized::vsplat;
using optimized::vstore;

// vtanh's 1 - 2 / (e^2x + 1) loses x's relative precision as x goes to 0 (tanh(1e-5) would keep few of its digits,
// tanh(0.3) is 6 ulp off): below |x| = 0.55 the odd series to x^17 is within a float's rounding instead (its
// x^19 term is under 3e-9 there), and above it the cancellation costs at most a bit or two.
template <class V>
EMBER_ALWAYS_INLINE V vtanh_odd(V x) {
  using I = typename optimized::IntVec<V>::type;
  const V x2 = x * x;
  V p = vsplat<V>(6404582.0f / 10854718875.0f);
  p = p * x2 - 929569.0f / 638512875.0f;
  p = p * x2 + 21844.0f / 6081075.0f;
  p = p * x2 - 1382.0f / 155925.0f;
  p = p * x2 + 62.0f / 2835.0f;
  p = p * x2 - 17.0f / 315.0f;
  p = p * x2 + 2.0f / 15.0f;
  p = p * x2 - 1.0f / 3.0f;
  const V near0 = x + x * x2 * p;
  const I small = x2 < 0.3025f;
  return optimized::vselect<V>(small, near0, optimized::vtanh(x));
}

// vexp clamps its argument at 88.38 (softmax's and SiLU's exp never need more); an Exp node's output must reach the
// float range's top and then infinity: there it is exp(x / 2) squared.
template <class V>
EMBER_ALWAYS_INLINE V vexp_to_infinity(V x) {
  const V half = optimized::vexp(x * 0.5f);
  return optimized::vselect<V>(x > 88.0f, half * half, optimized::vexp(x));
}

template <UnaryFunction F, class V>
EMBER_ALWAYS_INLINE V apply(V x) {
  if (F == UnaryFunction::Gelu) return optimized::vgelu(x, false);
  if (F == UnaryFunction::Tanh) return vtanh_odd(x);
  return vexp_to_infinity(x);
}

template <UnaryFunction F, class V>
EMBER_ALWAYS_INLINE void vector_loop(const float* x, float* y, uint64_t n) {
  constexpr uint64_t L = Lanes<V>::value;
  uint64_t i = 0;
  for (; i + L <= n; i += L) vstore(y + i, apply<F>(vload<V>(x + i)));
  if (i < n) {  // the tail through one zero-padded vector, rounding as the body does
    float buf[L] = {};
    memcpy(buf, x + i, (n - i) * sizeof(float));
    vstore(buf, apply<F>(vload<V>(buf)));
    memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

template <UnaryFunction F>
void vector_baseline(const float* x, float* y, uint64_t n) {
  vector_loop<F, optimized::f32x4>(x, y, n);
}
#if EMBER_SIMD_X86_DISPATCH
template <UnaryFunction F>
EMBER_TARGET_AVX2 void vector_avx2(const float* x, float* y, uint64_t n) {
  vector_loop<F, optimized::f32x8>(x, y, n);
}
#endif

// The vec_math.h functions, on the widest vectors this CPU has among the two the optimized kernels use here.
template <UnaryFunction F>
void vector_unary(const float* x, float* y, uint64_t n) {
#if EMBER_SIMD_X86_DISPATCH
  if (optimized::cpu_has_avx2_fma()) return vector_avx2<F>(x, y, n);
#endif
  vector_baseline<F>(x, y, n);
}

// The rest have no vector version in vec_math.h; the C library's, element by element, as the portable kernels.
template <class Fn>
void scalar_unary(const float* x, float* y, uint64_t n, Fn fn) {
  for (uint64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
}

}  // namespace

void unary(UnaryFunction f, const float* x, float* y, uint64_t n) {
  switch (f) {
    case UnaryFunction::Gelu: return vector_unary<UnaryFunction::Gelu>(x, y, n);
    case UnaryFunction::Tanh: return vector_unary<UnaryFunction::Tanh>(x, y, n);
    case UnaryFunction::Exp: return vector_unary<UnaryFunction::Exp>(x, y, n);
    case UnaryFunction::Log: return scalar_unary(x, y, n, [](float v) { return logf(v); });
    case UnaryFunction::Sin: return scalar_unary(x, y, n, [](float v) { return sinf(v); });
    case UnaryFunction::Cos: return scalar_unary(x, y, n, [](float v) { return cosf(v); });
    case UnaryFunction::ReciprocalSquareRoot: return scalar_unary(x, y, n, [](float v) { return 1.0f / sqrtf(v); });
  }
}

void gelu(const float* x, float* y, uint64_t n) { unary(UnaryFunction::Gelu, x, y, n); }

void batch_matmul(const float* a, const float* bm, float* c, uint64_t batch, uint32_t m, uint32_t k, uint32_t n) {
  const uint64_t mk = static_cast<uint64_t>(m) * k, kn = static_cast<uint64_t>(k) * n;
  const uint64_t mn = static_cast<uint64_t>(m) * n;
  if (k == 0) {  // empty sums: zeros, which the GEMM's loops over K would never write
    memset(c, 0, batch * mn * sizeof(float));
    return;
  }
  for (uint64_t b = 0; b < batch; ++b) {
    optimized::Gemm g;
    g.M = m, g.N = n, g.K = k;
    g.a = a + b * mk, g.lda = k;
    g.b = bm + b * kn, g.ldb = n;
    g.c = c + b * mn, g.ldc = n;
    optimized::sgemm(g);
  }
}

void concatenate(const void* const* inputs, const uint64_t* row_bytes, uint32_t count, uint64_t outer, void* output) {
  uint8_t* out = static_cast<uint8_t*>(output);
  for (uint64_t r = 0; r < outer; ++r) {
    for (uint32_t i = 0; i < count; ++i) {
      memcpy(out, static_cast<const uint8_t*>(inputs[i]) + r * row_bytes[i], row_bytes[i]);
      out += row_bytes[i];
    }
  }
}

void slice(const void* src, void* dst, const uint32_t* dims, const uint32_t* offsets, const uint32_t* sizes,
           uint32_t rank, size_t element_size) {
  constexpr uint32_t kMaxRank = 6;
  uint64_t stride[kMaxRank];  // the input's, in bytes
  uint64_t s = element_size;
  for (uint32_t d = rank; d-- > 0;) {
    if (sizes[d] == 0) return;  // an empty box
    stride[d] = s;
    s *= dims[d];
  }
  const uint8_t* in = static_cast<const uint8_t*>(src);
  uint8_t* out = static_cast<uint8_t*>(dst);
  if (rank == 0) {
    memcpy(out, in, element_size);
    return;
  }
  // Trailing dims taken whole are contiguous with the last partial one: one copy of `run` bytes per position of
  // the dims before it (the outer odometer).
  uint32_t k = rank - 1;
  while (k > 0 && offsets[k] == 0 && sizes[k] == dims[k]) --k;
  const uint64_t run = sizes[k] * stride[k];
  uint64_t base = offsets[k] * stride[k];
  for (uint32_t d = 0; d < k; ++d) base += offsets[d] * stride[d];
  uint32_t index[kMaxRank] = {};
  uint64_t at = base;
  for (;;) {
    memcpy(out, in + at, run);
    out += run;
    // Next position of dims [0, k): carry from the innermost.
    uint32_t d = k;
    for (; d-- > 0;) {
      at += stride[d];
      if (++index[d] < sizes[d]) break;
      at -= stride[d] * sizes[d];
      index[d] = 0;
    }
    if (d == UINT32_MAX) return;  // every position copied
  }
}

}  // namespace xnnpack
}  // namespace ember
