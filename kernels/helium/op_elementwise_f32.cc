// Element-wise Float kernels on MVE (util/elementwise_f32.h):
//   relu, hardtanh, clamp   one clamping pass (in place allowed): below lo takes lo, above hi takes hi, so NaN
//                           stays NaN as in eager PyTorch; a NaN bound makes every element NaN, as portable's;
//   add, sub, mul           same shapes, a one-element operand on either side, a block repeated over the other
//                           operand's leading dims (a bias row), or one value per channel over the dims after it;
//                           other broadcasts, dtype mixes and dim orders go to portable.
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/elementwise_f32.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace helium {
namespace {

bool float_selected(uint32_t mask) { return (mask & dtype_bit(ScalarType::Float)) != 0; }

// A contiguous Float self and out: what the clamping kernels compute (anything else is portable's).
bool clamps(uint32_t mask, const Tensor& self, const Tensor& out) {
  return float_selected(mask) && self.scalar_type() == ScalarType::Float && out.scalar_type() == ScalarType::Float &&
         self.is_contiguous() && out.is_contiguous();
}

void clamp_tensor(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out, bool has_lo, float lo,
                  bool has_hi, float hi) {
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, self.sizes()), InvalidArgument,
                     "%s: out's shape differs from self's", name);
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  const int32_t n = static_cast<int32_t>(self.numel());
  if ((has_lo && lo != lo) || (has_hi && hi != hi)) return fill_floats(o, n, has_lo && lo != lo ? lo : hi);
  if (has_lo && has_hi) return clamp_floats<true, true>(x, o, n, lo, hi);
  if (has_lo) return clamp_floats<true, false>(x, o, n, lo, 0.0f);
  clamp_floats<false, true>(x, o, n, 0.0f, hi);
}

// ---- binary ---------------------------------------------------------------------------------------------------

enum class Pattern { kSame, kScalarA, kScalarB, kRowA, kRowB, kColA, kColB };

// `small` repeats over `big` as a block over big's leading dims: after its leading 1s, small's sizes are big's
// last ones (a bias row over the last dim).
bool repeats_as_block(const Tensor& small, const Tensor& big) {
  const int32_t sd = small.dim(), bd = big.dim();
  if (sd < 1 || sd > bd) return false;
  int32_t first = 0;
  while (first < sd && small.size(first) == 1) ++first;
  if (first == sd) return false;  // one element: the scalar pattern
  for (int32_t d = first; d < sd; ++d) {
    if (small.size(d) != big.size(d + bd - sd)) return false;
  }
  return true;
}

// `small` holds one value per index of a run of big's dims, each covering the more than one element of big's dims
// after them (a [C, 1, 1] or [1, C, 1, 1] scale of [N, C, H, W]). *run: the elements each value covers.
bool repeats_per_channel(const Tensor& small, const Tensor& big, int64_t* run) {
  const int32_t sd = small.dim(), bd = big.dim();
  if (sd < 1 || sd > bd) return false;
  int32_t first = -1, last = -1;
  for (int32_t d = 0; d < sd; ++d) {
    if (small.size(d) == 1) continue;
    if (first < 0) first = d;
    last = d;
  }
  if (first < 0) return false;
  for (int32_t d = first; d <= last; ++d) {
    if (small.size(d) != big.size(d + bd - sd)) return false;
  }
  int64_t inner = 1;
  for (int32_t d = last + 1 + bd - sd; d < bd; ++d) inner *= big.size(d);
  if (inner <= 1) return false;  // nothing after the channels: the block pattern
  *run = inner;
  return true;
}

// The pattern of a call this library computes, or false for portable. Out must already have the larger operand's
// shape (a bounded out that needs resizing is portable's).
bool binary_pattern(uint32_t mask, const Tensor& a, const Tensor& b, const Tensor& out, Pattern* p, int64_t* run) {
  if (!float_selected(mask) || a.scalar_type() != ScalarType::Float || b.scalar_type() != ScalarType::Float ||
      out.scalar_type() != ScalarType::Float || !a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous()) {
    return false;
  }
  if (a.sizes().equals(b.sizes())) {
    *p = Pattern::kSame;
  } else if (b.numel() == 1 && b.dim() <= a.dim()) {
    *p = Pattern::kScalarB;
  } else if (a.numel() == 1 && a.dim() <= b.dim()) {
    *p = Pattern::kScalarA;
  } else if (repeats_as_block(b, a)) {
    *p = Pattern::kRowB;
  } else if (repeats_as_block(a, b)) {
    *p = Pattern::kRowA;
  } else if (repeats_per_channel(b, a, run)) {
    *p = Pattern::kColB;
  } else if (repeats_per_channel(a, b, run)) {
    *p = Pattern::kColA;
  } else {
    return false;
  }
  const bool a_small = *p == Pattern::kScalarA || *p == Pattern::kRowA || *p == Pattern::kColA;
  return out.sizes().equals((a_small ? b : a).sizes());
}

template <BinaryOp Op>
void binary_run(Pattern p, const Tensor& a, const Tensor& b, Tensor& out, float alpha, int64_t run) {
  const float* pa = a.const_data_ptr<float>();
  const float* pb = b.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  const int64_t n = out.numel();
  // The scalar-b loops take b * alpha once, as each element's product would round it.
  auto scaled = [alpha](float v) { return Op == BinaryOp::AddScaled ? v * alpha : v; };
  switch (p) {
    case Pattern::kSame: return binary_floats<Op>(pa, pb, po, static_cast<int32_t>(n), alpha);
    case Pattern::kScalarB: return binary_floats_scalar_b<Op>(pa, scaled(pb[0]), po, static_cast<int32_t>(n));
    case Pattern::kScalarA: return binary_floats_scalar_a<Op>(pa[0], pb, po, static_cast<int32_t>(n), alpha);
    case Pattern::kRowB: {
      const int64_t row = b.numel();
      for (int64_t i = 0; i < n; i += row) binary_floats<Op>(pa + i, pb, po + i, static_cast<int32_t>(row), alpha);
      return;
    }
    case Pattern::kRowA: {
      const int64_t row = a.numel();
      for (int64_t i = 0; i < n; i += row) binary_floats<Op>(pa, pb + i, po + i, static_cast<int32_t>(row), alpha);
      return;
    }
    case Pattern::kColB: {
      const int64_t values = b.numel();
      for (int64_t i = 0, k = 0; i < n; i += run, k = k + 1 == values ? 0 : k + 1) {
        binary_floats_scalar_b<Op>(pa + i, scaled(pb[k]), po + i, static_cast<int32_t>(run));
      }
      return;
    }
    case Pattern::kColA: {
      const int64_t values = a.numel();
      for (int64_t i = 0, k = 0; i < n; i += run, k = k + 1 == values ? 0 : k + 1) {
        binary_floats_scalar_a<Op>(pa[k], pb + i, po + i, static_cast<int32_t>(run), alpha);
      }
      return;
    }
  }
}

// One loop for every alpha (1 included: b * 1 is b exactly), so add and sub link one copy of the patterns.
void add_like(Pattern p, const Tensor& a, const Tensor& b, Tensor& out, float alpha, int64_t run) {
  binary_run<BinaryOp::AddScaled>(p, a, b, out, alpha, run);
}

}  // namespace

void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!clamps(selected_dtypes::relu_out_helium, self, out)) return portable::relu_out(ctx, self, out);
  clamp_tensor(ctx, "relu.out", self, out, true, 0.0f, false, 0.0f);
}

void hardtanh_out(KernelContext& ctx, const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out) {
  if (!clamps(selected_dtypes::hardtanh_out_helium, self, out)) {
    return portable::hardtanh_out(ctx, self, min_val, max_val, out);
  }
  clamp_tensor(ctx, "hardtanh.out", self, out, true, static_cast<float>(min_val.to_double()), true,
               static_cast<float>(max_val.to_double()));
}

void clamp_out(KernelContext& ctx, const Tensor& self, Optional<Scalar> min, Optional<Scalar> max, Tensor& out) {
  if (!clamps(selected_dtypes::clamp_out_helium, self, out)) return portable::clamp_out(ctx, self, min, max, out);
  EMBER_KERNEL_CHECK(ctx, min.has_value() || max.has_value(), InvalidArgument, "clamp.out: min and max are both None");
  clamp_tensor(ctx, "clamp.out", self, out, min.has_value(),
               min.has_value() ? static_cast<float>(min.value().to_double()) : 0.0f, max.has_value(),
               max.has_value() ? static_cast<float>(max.value().to_double()) : 0.0f);
}

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  Pattern p;
  int64_t run = 0;
  if (!binary_pattern(selected_dtypes::add_out_helium, self, other, out, &p, &run)) {
    return portable::add_out(ctx, self, other, alpha, out);
  }
  add_like(p, self, other, out, static_cast<float>(alpha.to_double()), run);
}

void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  Pattern p;
  int64_t run = 0;
  if (!binary_pattern(selected_dtypes::sub_out_helium, self, other, out, &p, &run)) {
    return portable::sub_out(ctx, self, other, alpha, out);
  }
  add_like(p, self, other, out, -static_cast<float>(alpha.to_double()), run);
}

void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  Pattern p;
  int64_t run = 0;
  if (!binary_pattern(selected_dtypes::mul_out_helium, self, other, out, &p, &run)) {
    return portable::mul_out(ctx, self, other, out);
  }
  binary_run<BinaryOp::Mul>(p, self, other, out, 1.0f, run);
}

}  // namespace helium
}  // namespace ember
