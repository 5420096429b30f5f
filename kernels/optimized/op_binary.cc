// add, sub, mul, div for Float in the broadcast patterns transformers and CNNs produce: same shapes (residual adds),
// a block repeated over the leading dims (a bias row; an attention mask over the heads), a one-element tensor on
// either side (attention's 1/sqrt(d)), and one value per channel over the dims after it (squeeze-excitation's
// [N,C,1,1] scale of an [N,C,H,W] tensor). One vector pass each, split over the method's threads when large; any
// other pattern, dtype mix or dim order goes to portable.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/simd.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

enum class Op { Add, Mul, Div };  // sub is add with -alpha
enum class Shape { Same, RowB, RowA, ScalarB, ScalarA, ColB, ColA, Runs };

// Any other broadcast (RoPE's cos [T, 1, D] against q [1, T, H, D], which is neither a row nor a column of it): the
// output is walked as runs of its innermost coalesced dim, in which each operand either moves one element a step or
// stays on one, so every run is one of the Same/Scalar vector loops. Dims of size 1 are dropped and neighbours that
// both operands traverse alike are merged first, so the runs are as long as the layout allows.
struct RunWalk {
  int32_t outer = 0;  // dims outside the run, outermost first
  int64_t size[kMaxTensorDim] = {}, stride_a[kMaxTensorDim] = {}, stride_b[kMaxTensorDim] = {};
  int64_t inner = 1;
  Shape shape = Shape::Same;  // of each run: Same, ScalarA (a stays) or ScalarB (b stays)
};

template <class V>
EMBER_ALWAYS_INLINE V apply(Op op, V a, V b, float alpha) {
  return op == Op::Add ? a + b * alpha : op == Op::Mul ? a * b : a / b;
}

// o[0, n) from a and b, where the operand that is not small (both, for Same) starts at the same element as o, and
// for Col* the small operand's value for o's first run is c[k0 % cols].
template <class V>
EMBER_ALWAYS_INLINE void binary_loop(Op op, Shape shape, const float* a, const float* b, float* o, int64_t n,
                                     int64_t row, int64_t cols, int64_t k0, float alpha) {
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
  if (shape == Shape::ColB || shape == Shape::ColA) {
    // One value of the small operand per run of `row` elements of the other (its channel's plane).
    const bool col_b = shape == Shape::ColB;
    const float* full = col_b ? a : b;
    const float* c = col_b ? b : a;
    for (int64_t start = 0, k = k0; start < n; start += row, ++k) {
      const float* f = full + start;
      float* orow = o + start;
      const float sv = c[k % cols];
      const V vs = vsplat<V>(sv);
      int64_t i = 0;
      for (; i + L <= row; i += L) {
        const V vf = vload<V>(f + i);
        vstore(orow + i, col_b ? apply(op, vf, vs, alpha) : apply(op, vs, vf, alpha));
      }
      for (; i < row; ++i) orow[i] = col_b ? scalar(f[i], sv) : scalar(sv, f[i]);
    }
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

// row: the repeated block's length (Row*), or the run per small value (Col*); cols: the small operand's numel (Col*).
void binary_baseline(Op op, Shape s, const float* a, const float* b, float* o, int64_t n, int64_t row, int64_t cols,
                     int64_t k0, float al) {
  binary_loop<f32x4>(op, s, a, b, o, n, row, cols, k0, al);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void binary_avx2(Op op, Shape s, const float* a, const float* b, float* o, int64_t n, int64_t row,
                                   int64_t cols, int64_t k0, float al) {
  binary_loop<f32x8>(op, s, a, b, o, n, row, cols, k0, al);
}
#endif

// `small` broadcasts over `big` as a block repeated over big's leading dims: right-aligned, small's sizes after
// its leading 1s equal big's last ones (a bias row over the last dim; an attention mask [1, 1, S, S] over the
// heads of [1, H, S, S] scores). The block is small's elements in order.
bool is_row_of(const Tensor& small, const Tensor& big) {
  const int32_t sd = small.dim(), bd = big.dim();
  if (sd < 1 || sd > bd) return false;
  int32_t first = 0;
  while (first < sd && small.size(first) == 1) ++first;
  for (int32_t d = first; d < sd; ++d)
    if (small.size(d) != big.size(d + bd - sd)) return false;
  return first < sd;  // all ones: the scalar pattern
}

// `small` broadcasts over `big` as one value per index of a block of dims, over more than one element of the dims
// after it: right-aligned, small's sizes are 1 outside [first, last] and equal big's inside, and big has more than
// one element after `last`. *inner: that many elements (the run each small value covers).
bool is_col_of(const Tensor& small, const Tensor& big, int64_t* inner) {
  const int32_t sd = small.dim(), bd = big.dim();
  if (sd < 1 || sd > bd) return false;
  const int32_t shift = bd - sd;
  int32_t first = -1, last = -1;
  for (int32_t d = 0; d < sd; ++d) {
    if (small.size(d) == 1) continue;
    if (small.size(d) != big.size(d + shift)) return false;
    if (first < 0) first = d;
    last = d;
  }
  if (first < 0) return false;  // one element: the scalar pattern
  for (int32_t d = first; d <= last; ++d)
    if (small.size(d) != big.size(d + shift)) return false;
  int64_t run = 1;
  for (int32_t d = last + 1 + shift; d < bd; ++d) run *= big.size(d);
  if (run <= 1) return false;  // nothing after it: the row pattern, or portable
  *inner = run;
  return true;
}

// The pattern this kernel runs, or false for portable. Out must already have the big operand's shape (a bounded
// out is left to portable, which resizes it).
// Element strides of `t` (contiguous) against out's dims, right-aligned; 0 where t broadcasts. False when a size of
// t is neither 1 nor out's.
bool broadcast_strides(const Tensor& t, const Tensor& out, int64_t* strides) {
  const int32_t od = out.dim(), shift = od - t.dim();
  int64_t step = 1;
  for (int32_t d = od - 1; d >= 0; --d) {
    const int32_t td = d - shift;
    const int64_t ts = td >= 0 ? t.size(td) : 1;
    if (ts != 1 && ts != out.size(d)) return false;
    strides[d] = ts == 1 ? 0 : step;
    step *= ts;
  }
  return true;
}

bool plan_runs(const Tensor& a, const Tensor& b, const Tensor& out, RunWalk* w) {
  int64_t sa[kMaxTensorDim], sb[kMaxTensorDim];
  if (out.dim() < 1 || !broadcast_strides(a, out, sa) || !broadcast_strides(b, out, sb)) return false;
  // Keep the dims of size > 1, merging each into the kept dim inside it when both operands step over the pair as
  // over one dim.
  int32_t n = 0;  // kept dims, innermost first while building
  int64_t size[kMaxTensorDim], ka[kMaxTensorDim], kb[kMaxTensorDim];
  for (int32_t d = out.dim() - 1; d >= 0; --d) {
    const int64_t sz = out.size(d);
    if (sz == 1) continue;
    if (n > 0 && sa[d] == ka[n - 1] * size[n - 1] && sb[d] == kb[n - 1] * size[n - 1]) {
      size[n - 1] *= sz;
      continue;
    }
    size[n] = sz, ka[n] = sa[d], kb[n] = sb[d];
    ++n;
  }
  if (n == 0) return false;  // one element: the scalar patterns
  if (ka[0] > 1 || kb[0] > 1 || (ka[0] == 0 && kb[0] == 0)) return false;
  w->inner = size[0];
  w->shape = ka[0] == 0 ? Shape::ScalarA : kb[0] == 0 ? Shape::ScalarB : Shape::Same;
  w->outer = n - 1;
  for (int32_t i = 1; i < n; ++i) {
    const int32_t o = n - 1 - i;  // outermost first
    w->size[o] = size[i], w->stride_a[o] = ka[i], w->stride_b[o] = kb[i];
  }
  return true;
}

// Which loop serves out = a op b. out is first fitted to the broadcast shape (bounded-dynamic outputs resized, as
// portable would); anything this cannot serve (other dtypes, dim orders, shapes that do not broadcast) goes to
// portable, which names the fault.
bool pattern(uint32_t mask, const Tensor& a, const Tensor& b, Tensor& out, Shape* s, int64_t* inner, RunWalk* walk) {
  if (!computes_float(mask, out) || a.scalar_type() != ScalarType::Float || b.scalar_type() != ScalarType::Float ||
      !a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous())
    return false;
  int32_t shape[kMaxTensorDim];
  const int rank = portable::broadcast_shape(a.sizes(), b.sizes(), shape);
  if (rank < 0 || !portable::fit_output(out, shape, static_cast<size_t>(rank))) return false;
  if (a.sizes().equals(b.sizes())) *s = Shape::Same;
  else if (b.numel() == 1 && b.dim() <= a.dim()) *s = Shape::ScalarB;
  else if (a.numel() == 1 && a.dim() <= b.dim()) *s = Shape::ScalarA;
  else if (is_row_of(b, a)) *s = Shape::RowB;
  else if (is_row_of(a, b)) *s = Shape::RowA;
  else if (is_col_of(b, a, inner)) *s = Shape::ColB;
  else if (is_col_of(a, b, inner)) *s = Shape::ColA;
  else *s = Shape::Runs;
  const Tensor& big = (*s == Shape::ScalarA || *s == Shape::RowA || *s == Shape::ColA) ? b : a;
  if (*s != Shape::Runs && out.sizes().equals(big.sizes())) return true;
  *s = Shape::Runs;
  return plan_runs(a, b, out, walk);
}

// The runs [r0, r1) of `w`: each run's operands found from its outer index, which then steps like an odometer.
template <class Loop>
void walk_runs(const RunWalk& w, const float* a, const float* b, float* o, int64_t r0, int64_t r1, Loop loop) {
  int64_t idx[kMaxTensorDim], off_a = 0, off_b = 0;
  int64_t left = r0;
  for (int32_t d = w.outer - 1; d >= 0; --d) {
    idx[d] = left % w.size[d];
    left /= w.size[d];
    off_a += idx[d] * w.stride_a[d];
    off_b += idx[d] * w.stride_b[d];
  }
  for (int64_t r = r0; r < r1; ++r) {
    loop(a + off_a, b + off_b, o + r * w.inner);
    for (int32_t d = w.outer - 1; d >= 0; --d) {
      off_a += w.stride_a[d];
      off_b += w.stride_b[d];
      if (++idx[d] < w.size[d]) break;
      off_a -= idx[d] * w.stride_a[d];
      off_b -= idx[d] * w.stride_b[d];
      idx[d] = 0;
    }
  }
}

void run_walk(KernelContext& ctx, Op op, const RunWalk& w, const Tensor& a, const Tensor& b, Tensor& out, float alpha) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const float* pa = a.const_data_ptr<float>();
  const float* pb = b.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  const int64_t inner = w.inner;
  parallel_elements(ctx.threads(), n, inner, kSplitPlain, [&](int64_t begin, int64_t end) {
    walk_runs(w, pa, pb, po, begin / inner, end / inner, [&](const float* ra, const float* rb, float* ro) {
#if EMBER_SIMD_X86_DISPATCH
      if (cpu_has_avx2_fma()) return binary_avx2(op, w.shape, ra, rb, ro, inner, 0, 0, 0, alpha);
#endif
      binary_baseline(op, w.shape, ra, rb, ro, inner, 0, 0, 0, alpha);
    });
  });
}

void run(KernelContext& ctx, Op op, Shape s, const RunWalk& walk, const Tensor& a, const Tensor& b, Tensor& out,
         float alpha, int64_t inner) {
  if (s == Shape::Runs) return run_walk(ctx, op, walk, a, b, out, alpha);
  const bool small_a = s == Shape::ScalarA || s == Shape::RowA || s == Shape::ColA;
  const bool small_b = s == Shape::ScalarB || s == Shape::RowB || s == Shape::ColB;
  const Tensor& small = small_a ? a : b;
  const int64_t n = out.numel();
  const bool col = s == Shape::ColA || s == Shape::ColB;
  const bool whole = s == Shape::Same || s == Shape::ScalarA || s == Shape::ScalarB;
  const int64_t row = col ? inner : small.numel();
  const int64_t cols = col ? small.numel() : 0;
  if (n == 0 || row == 0) return;
  const float* pa = a.const_data_ptr<float>();
  const float* pb = b.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  parallel_elements(ctx.threads(), n, whole ? 16 : row, kSplitPlain, [&](int64_t begin, int64_t end) {
    const float* ta = small_a ? pa : pa + begin;
    const float* tb = small_b ? pb : pb + begin;
    const int64_t k0 = col ? begin / row : 0;
#if EMBER_SIMD_X86_DISPATCH
    if (cpu_has_avx2_fma()) return binary_avx2(op, s, ta, tb, po + begin, end - begin, row, cols, k0, alpha);
#endif
    binary_baseline(op, s, ta, tb, po + begin, end - begin, row, cols, k0, alpha);
  });
}

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  Shape s;
  int64_t inner = 0;
  RunWalk walk;
  if (!pattern(selected_dtypes::add_out_optimized, self, other, out, &s, &inner, &walk)) {
    return portable::add_out(ctx, self, other, alpha, out);
  }
  run(ctx, Op::Add, s, walk, self, other, out, alpha.to<float>(), inner);
}

void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  Shape s;
  int64_t inner = 0;
  RunWalk walk;
  if (!pattern(selected_dtypes::sub_out_optimized, self, other, out, &s, &inner, &walk)) {
    return portable::sub_out(ctx, self, other, alpha, out);
  }
  run(ctx, Op::Add, s, walk, self, other, out, -alpha.to<float>(), inner);
}

void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  Shape s;
  int64_t inner = 0;
  RunWalk walk;
  if (!pattern(selected_dtypes::mul_out_optimized, self, other, out, &s, &inner, &walk)) {
    return portable::mul_out(ctx, self, other, out);
  }
  run(ctx, Op::Mul, s, walk, self, other, out, 1.0f, inner);
}

void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  Shape s;
  int64_t inner = 0;
  RunWalk walk;
  if (!pattern(selected_dtypes::div_out_optimized, self, other, out, &s, &inner, &walk)) {
    return portable::div_out(ctx, self, other, out);
  }
  run(ctx, Op::Div, s, walk, self, other, out, 1.0f, inner);
}

}  // namespace optimized
}  // namespace ember
