// ember_quantized::mul.out on MVE: eight elements per step. Widening loads put eight bytes into 16-bit lanes, where
// the centered inputs (|q - zp| <= 255) fit; the widening multiplies VMULLB/VMULLT give the exact products of the
// even and odd lanes as two vectors of four int32, each requantized (kernels/quantized/util/geometry.h's MulPlan:
// the same checks, plan and broadcast runs as the scalar kernel, so the same bits). Saturating narrows put them
// back into the even and odd 16-bit lanes, where the zero point and the activation clamp apply (saturation keeps
// every value beyond int8 beyond the clamp, so it gives what the 32-bit clamp gives), and a narrowing store writes
// the bytes. Each run is a loop of whole vectors and one predicated tail: against the other input's run, or
// against its one repeated element where it is broadcast.
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

struct MulLanes {
  int32_t multiplier, left, negated_right;
  int16_t zp_self, zp_other, zp_out, lo, hi;
};

MulLanes mul_lanes(const quantized::MulPlan& p) {
  return MulLanes{p.steps.multiplier,
                  p.steps.left,
                  -p.steps.right,
                  static_cast<int16_t>(p.zp_self),
                  static_cast<int16_t>(p.zp_other),
                  static_cast<int16_t>(p.zp_out),
                  static_cast<int16_t>(p.activation_min),
                  static_cast<int16_t>(p.activation_max)};
}

// The loop-invariant values in locals (registers), and eight outputs from eight centered inputs of each side.
struct Mul8 {
  int32_t multiplier, left, negated_right;
  int16_t zp_out;
  int16x8_t lo, hi;

  int16x8_t operator()(int16x8_t a, int16x8_t b) const {
    const int32x4_t even = requant_steps_lanes(vmullbq_int_s16(a, b), multiplier, left, negated_right);
    const int32x4_t odd = requant_steps_lanes(vmulltq_int_s16(a, b), multiplier, left, negated_right);
    // The narrows fill every lane (even, then odd), so they start from an uninitialized vector.
    const int16x8_t narrow = vqmovntq_s32(vqmovnbq_s32(vuninitializedq_s16(), even), odd);
    return vminq_s16(vmaxq_s16(vqaddq_n_s16(narrow, zp_out), lo), hi);
  }
};

// One run of n outputs: `a` steps through it, `b` too when kOtherSteps, else its element b[0] repeats (held in a
// register). Whole vectors first, then one predicated for the tail.
template <bool kOtherSteps>
inline void mul_run(const int8_t* a, const int8_t* b, int8_t* o, int32_t n, const Mul8& mul8, int16_t zp_a,
                    int16_t zp_b) {
  const int16x8_t b_repeated = vdupq_n_s16(static_cast<int16_t>(b[0] - zp_b));
  for (; n >= 8; n -= 8, a += 8, o += 8) {
    int16x8_t vb = b_repeated;
    if (kOtherSteps) {
      vb = vsubq_n_s16(vldrbq_s16(b), zp_b);
      b += 8;
    }
    vstrbq_s16(o, mul8(vsubq_n_s16(vldrbq_s16(a), zp_a), vb));
  }
  if (n > 0) {
    const mve_pred16_t p = vctp16q(static_cast<uint32_t>(n));
    const int16x8_t vb = kOtherSteps ? vsubq_n_s16(vldrbq_z_s16(b, p), zp_b) : b_repeated;
    vstrbq_p_s16(o, mul8(vsubq_n_s16(vldrbq_z_s16(a, p), zp_a), vb), p);
  }
}

// Every run, for a requantization that ends with a right shift (negated_right != 0: the caller checked), which
// the compiler is told so the test for it inside the shared lanes requantization leaves the loops.
void mul_runs(const int8_t* a, const int8_t* b, int8_t* o, const quantized::BroadcastRuns& runs, bool swap,
              const MulLanes& l) {
  const int32_t negated_right = l.negated_right;
  if (negated_right == 0) __builtin_unreachable();
  const Mul8 mul8{l.multiplier, l.left, negated_right, l.zp_out, vdupq_n_s16(l.lo), vdupq_n_s16(l.hi)};
  const bool both_step = runs.self_steps && runs.other_steps;
  const int32_t n = static_cast<int32_t>(runs.inner);
  quantized::for_each_run(runs, [&](int64_t self_at, int64_t other_at, int64_t o_at) {
    const int8_t* run_a = a + (swap ? other_at : self_at);
    const int8_t* run_b = b + (swap ? self_at : other_at);
    if (both_step) {
      mul_run<true>(run_a, run_b, o + o_at, n, mul8, l.zp_self, l.zp_other);
    } else {
      mul_run<false>(run_a, run_b, o + o_at, n, mul8, l.zp_self, l.zp_other);
    }
  });
}

}  // namespace

void quantized_mul_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out) {
  quantized::MulPlan plan;
  if (!quantized::plan_mul(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point, output_scale,
                           output_zero_point, activation_min, activation_max, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::quantized_mul_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::mul.out", kMask, self.scalar_type(), [&](auto) {
    // The product is symmetric in its two centered inputs: with self the one repeated along the runs, swap the
    // sides so the stepping one is `a` (the zero points swap with them).
    const bool swap = !plan.runs.self_steps && plan.runs.other_steps;
    MulLanes l = mul_lanes(plan);
    if (swap) {
      l.zp_self = static_cast<int16_t>(plan.zp_other);
      l.zp_other = static_cast<int16_t>(plan.zp_self);
    }
    const int8_t* a = (swap ? other : self).const_data_ptr<int8_t>();
    const int8_t* b = (swap ? self : other).const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    if (l.negated_right != 0) {
      mul_runs(a, b, o, plan.runs, swap, l);
      return;
    }
    // No final shift: only a multiplier of about 2^14 or more gets none (an output scale that much finer than the
    // products', so every nonzero product saturates). The scalar definition computes that rare case, rather
    // than a second copy of the vector loops.
    const int8_t* x = self.const_data_ptr<int8_t>();
    const int8_t* y = other.const_data_ptr<int8_t>();
    const int64_t dx = plan.runs.self_steps ? 1 : 0, dy = plan.runs.other_steps ? 1 : 0;
    quantized::for_each_run(plan.runs, [&](int64_t x_at, int64_t y_at, int64_t o_at) {
      for (int64_t i = 0; i < plan.runs.inner; ++i) {
        o[o_at + i] = quantized::mul_one(x[x_at + i * dx], y[y_at + i * dy], plan);
      }
    });
  });
}

}  // namespace helium
}  // namespace ember
