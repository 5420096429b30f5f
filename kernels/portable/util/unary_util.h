// The elementwise loop the unary kernel families share: one template, a small functor per op. Output dtype picks
// the compute type (float for Half/BFloat16/Float, double for Double, the type itself for integers and Bool);
// an input of another dtype is converted a block at a time by one non-template-on-op loader, so mixed-dtype
// calls cost one loader per compute type, not one per op and input dtype.
#pragma once

#include <stdint.h>

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

// Dtypes load_block can read (every real type and Bool).
constexpr uint32_t kLoadableTypes = kRealAndBoolTypes;

// Elements [start, start + n) of `t` (a dtype in kLoadableTypes) converted to C into `buf`. Instantiated in
// unary_util.cc for float, double and bool.
template <typename C>
void load_block(const Tensor& t, int64_t start, int64_t n, C* buf);

// Elements per load_block call: a small stack buffer (512 bytes of double) that keeps the converting loop tight.
constexpr int64_t kLoadBlock = 64;

// The checks every elementwise unary kernel makes, in the contract's order: self's dtype is one `in_types`
// allows (and, when `same_dtype`, out's equals it), out takes self's shape (resized when bounded) and shares its
// dim order (the loop walks memory, so contiguous and channels-last both work when they agree). Logs naming
// `name` and fails `ctx` on the first violation; returns whether all passed.
bool unary_checks(KernelContext& ctx, const char* name, const Tensor& in, uint32_t in_types, bool same_dtype,
                  Tensor& out);

// out[i] = op(self[i]) in out's compute type, for out's dtype in `OutMask`. With `Mixed`, self may have any
// dtype of kLoadableTypes (converted a block at a time); without it, self's dtype must equal out's.
template <uint32_t OutMask, bool Mixed, typename Op>
void unary_map(KernelContext& ctx, const char* name, const Tensor& in, Tensor& out, const Op& op) {
  if (!unary_checks(ctx, name, in, Mixed ? kLoadableTypes : OutMask, !Mixed, out)) return;
  EMBER_DISPATCH(ctx, name, OutMask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = out.mutable_data_ptr<T>();
    const int64_t n = out.numel();
    if (in.scalar_type() == out.scalar_type()) {
      const T* x = in.const_data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(op(static_cast<C>(x[i])));
      return;
    }
    if constexpr (Mixed) {
      C buf[kLoadBlock];
      for (int64_t s = 0; s < n; s += kLoadBlock) {
        const int64_t m = n - s < kLoadBlock ? n - s : kLoadBlock;
        load_block<C>(in, s, m, buf);
        for (int64_t j = 0; j < m; ++j) o[s + j] = static_cast<T>(op(buf[j]));
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
