// exp, tanh and erf over the vector types of simd.h, for the transformer kernels (softmax, GELU). Cephes-style
// range reduction and polynomials: exp within 2 ulp over the float range, 0 below it (so a -inf attention mask
// gives exactly 0) and NaN kept; erf within 2e-7 absolute. Header-only and always_inline, so each kernel's
// baseline and AVX2 copies get their own instruction set's version.
#pragma once

#include "compute/simd.h"

namespace ember {
namespace optimized {

typedef int32_t i32x4 __attribute__((vector_size(16)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
template <class V>
struct IntVec;
template <>
struct IntVec<f32x4> {
  using type = i32x4;
};
template <>
struct IntVec<f32x8> {
  using type = i32x8;
};
template <>
struct IntVec<f32x16> {
  using type = i32x16;
};

template <class V>
EMBER_ALWAYS_INLINE V vselect(typename IntVec<V>::type mask, V a, V b) {
  using I = typename IntVec<V>::type;
  return reinterpret_cast<V>((reinterpret_cast<I>(a) & mask) | (reinterpret_cast<I>(b) & ~mask));
}

template <class V>
EMBER_ALWAYS_INLINE V vmax(V a, V b) {
  return vselect<V>(a > b, a, b);
}

template <class V>
EMBER_ALWAYS_INLINE V vexp(V x) {
  using I = typename IntVec<V>::type;
  const V hi = vsplat<V>(88.3762626647949f), lo = vsplat<V>(-87.3365447504f);
  const I under = x < lo;
  // A NaN fails both compares, stays in c and propagates through the arithmetic: no select needed for it.
  V c = vselect<V>(x > hi, hi, x);
  c = vselect<V>(under, lo, c);
  // n = round(c / ln 2) by the 1.5 * 2^23 trick: adding it leaves n in t's low mantissa bits, rounded to nearest,
  // and subtracting it gives n as a float; three operations fewer than convert, compare and convert back (SiLU
  // over EfficientNet-B0's 6.2M elements is this exp's hottest use: 0.81 -> 0.60 ns an element, same 0.98 ulp
  // worst case over [-87.3, 88.3]). r = c - n ln 2 in two parts for precision.
  const V magic = vsplat<V>(12582912.0f);
  const V t = c * 1.44269504088896341f + magic;
  const V fn = t - magic;
  const V r = c - fn * 0.693359375f + fn * 2.12194440e-4f;
  V p = vsplat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const I n = reinterpret_cast<I>(t) - reinterpret_cast<I>(magic);
  const V scale = reinterpret_cast<V>((n + 127) << 23);
  return vselect<V>(under, vsplat<V>(0.0f), p * scale);
}

// tanh(u) = 1 - 2 / (exp(2u) + 1); saturates to +-1 with the exp's clamp, and is odd by construction near 0
// only to float precision, which GELU's 1e-5 tolerance covers.
template <class V>
EMBER_ALWAYS_INLINE V vtanh(V u) {
  return 1.0f - 2.0f / (vexp(u * 2.0f) + 1.0f);
}

// erf by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7), odd extension.
template <class V>
EMBER_ALWAYS_INLINE V verf(V x) {
  using I = typename IntVec<V>::type;
  const I neg = x < 0.0f;
  const V a = vselect<V>(neg, -x, x);
  const V t = 1.0f / (a * 0.3275911f + 1.0f);
  V p = vsplat<V>(1.061405429f);
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const V y = 1.0f - p * t * vexp(-a * a);
  return vselect<V>(neg, -y, y);
}

// GELU, erf form ("none") or tanh form, as ATen writes them: the optimized gelu kernel and the XNNPACK backend's
// CPU Gelu node (backends/xnnpack/runtime/cpu_nodes.h) share it.
template <class V>
EMBER_ALWAYS_INLINE V vgelu(V x, bool tanh_approx) {
  if (tanh_approx) {
    const V u = (x + x * x * x * 0.044715f) * 0.7978845608028654f;
    return x * 0.5f * (1.0f + vtanh(u));
  }
  return x * 0.5f * (1.0f + verf(x * 0.7071067811865476f));
}

}  // namespace optimized
}  // namespace ember
