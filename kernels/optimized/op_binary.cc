// add, sub, mul, div for Float in the broadcast patterns transformers produce: same shapes (residual adds), a row
// over the last dim (bias, LayerNorm-free scaling), and a one-element tensor on either side (attention's 1/sqrt(d)).
// One vector pass each; any other pattern, dtype mix or dim order goes to portable.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "kernels/optimized/util/simd.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

enum class Op { Add, Mul, Div };  // sub is add with -alpha
enum class Shape { Same, RowB, RowA, ScalarB, ScalarA };

template <class V>
EMBER_ALWAYS_INLINE V apply(Op op, V a, V b, float alpha) {
  return op == Op::Add ? a + b * alpha : op == Op::Mul ? a * b : a / b;
}

template <class V>
EMBER_ALWAYS_INLINE void binary_loop(Op op, Shape shape, const float* a, const float* b, float* o, int64_t n,
                                     int64_t row, float alpha) {
  constexpr int L = Lanes<V>::value;
  auto scalar = [&](float x, float y) {
    using V1 = float __attribute__((vector_size(4)));
    V1 vx = {x}, vy = {y};
    return apply<V1>(op, vx, vy, alpha)[0];
  };
  if (shape == Shape::Same || shape == Shape::ScalarA || shape == Shape::ScalarB) {
    const float sa = shape == Shape::ScalarA ? a[0] : 0.0f, sb = shape == Shape::ScalarB ? b[0] : 0.0f;
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      const V va = shape == Shape::ScalarA ? vsplat<V>(sa) : vload<V>(a + i);
      const V vb = shape == Shape::ScalarB ? vsplat<V>(sb) : vload<V>(b + i);
      vstore(o + i, apply(op, va, vb, alpha));
    }
    for (; i < n; ++i) o[i] = scalar(shape == Shape::ScalarA ? sa : a[i], shape == Shape::ScalarB ? sb : b[i]);
    return;
  }
  // A row of `row` elements repeated over the other operand's rows.
  const bool row_b = shape == Shape::RowB;
  const float* full = row_b ? a : b;
  const float* r = row_b ? b : a;
  for (int64_t start = 0; start < n; start += row) {
    const float* f = full + start;
    float* orow = o + start;
    int64_t i = 0;
    for (; i + L <= row; i += L) {
      const V vf = vload<V>(f + i), vr = vload<V>(r + i);
      vstore(orow + i, row_b ? apply(op, vf, vr, alpha) : apply(op, vr, vf, alpha));
    }
    for (; i < row; ++i) orow[i] = row_b ? scalar(f[i], r[i]) : scalar(r[i], f[i]);
  }
}

void binary_baseline(Op op, Shape s, const float* a, const float* b, float* o, int64_t n, int64_t row, float al) {
  binary_loop<f32x4>(op, s, a, b, o, n, row, al);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void binary_avx2(Op op, Shape s, const float* a, const float* b, float* o, int64_t n, int64_t row,
                                   float al) {
  binary_loop<f32x8>(op, s, a, b, o, n, row, al);
}
#endif

// `small` broadcasts over `big` as a row over the last dim: no more dims, last size equal, all others 1.
bool is_row_of(const Tensor& small, const Tensor& big) {
  if (small.dim() < 1 || small.dim() > big.dim() || big.dim() < 1) return false;
  if (small.size(small.dim() - 1) != big.size(big.dim() - 1)) return false;
  for (int32_t d = 0; d + 1 < small.dim(); ++d)
    if (small.size(d) != 1) return false;
  return true;
}

// The pattern this kernel runs, or false for portable. Out must already have the big operand's shape (a bounded
// out is left to portable, which resizes it).
bool pattern(uint32_t mask, const Tensor& a, const Tensor& b, const Tensor& out, Shape* s) {
  if (!computes_float(mask, out) || a.scalar_type() != ScalarType::Float || b.scalar_type() != ScalarType::Float ||
      !a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous())
    return false;
  if (a.sizes().equals(b.sizes())) *s = Shape::Same;
  else if (b.numel() == 1 && b.dim() <= a.dim()) *s = Shape::ScalarB;
  else if (a.numel() == 1 && a.dim() <= b.dim()) *s = Shape::ScalarA;
  else if (is_row_of(b, a)) *s = Shape::RowB;
  else if (is_row_of(a, b)) *s = Shape::RowA;
  else return false;
  const Tensor& big = (*s == Shape::ScalarA || *s == Shape::RowA) ? b : a;
  return out.sizes().equals(big.sizes());
}

void run(Op op, Shape s, const Tensor& a, const Tensor& b, Tensor& out, float alpha) {
  const Tensor& big = (s == Shape::ScalarA || s == Shape::RowA) ? b : a;
  const int64_t n = out.numel();
  const int64_t row = big.dim() ? big.size(big.dim() - 1) : 1;
  if (n == 0 || row == 0) return;
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx2_fma()) {
    return binary_avx2(op, s, a.const_data_ptr<float>(), b.const_data_ptr<float>(), out.mutable_data_ptr<float>(), n,
                       row, alpha);
  }
#endif
  binary_baseline(op, s, a.const_data_ptr<float>(), b.const_data_ptr<float>(), out.mutable_data_ptr<float>(), n, row,
                  alpha);
}

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  Shape s;
  if (!pattern(selected_dtypes::add_out_optimized, self, other, out, &s)) {
    return portable::add_out(ctx, self, other, alpha, out);
  }
  run(Op::Add, s, self, other, out, alpha.to<float>());
}

void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  Shape s;
  if (!pattern(selected_dtypes::sub_out_optimized, self, other, out, &s)) {
    return portable::sub_out(ctx, self, other, alpha, out);
  }
  run(Op::Add, s, self, other, out, -alpha.to<float>());
}

void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  Shape s;
  if (!pattern(selected_dtypes::mul_out_optimized, self, other, out, &s)) return portable::mul_out(ctx, self, other, out);
  run(Op::Mul, s, self, other, out, 1.0f);
}

void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  Shape s;
  if (!pattern(selected_dtypes::div_out_optimized, self, other, out, &s)) return portable::div_out(ctx, self, other, out);
  run(Op::Div, s, self, other, out, 1.0f);
}

}  // namespace optimized
}  // namespace ember
