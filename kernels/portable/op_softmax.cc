// _softmax, _log_softmax and ember::safe_softmax along one dim, max-subtracted for stability, accumulated in the
// compute type (float for the 16-bit types, double for Double).
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

template <uint32_t Mask>
void softmax_impl(KernelContext& ctx, const char* name, const Tensor& in, int64_t dim, bool half_to_float, bool log,
                  Tensor& out, bool safe = false) {
  EMBER_KERNEL_CHECK(ctx, !half_to_float, NotSupported, "%s: half_to_float is not supported", name);
  const int64_t n = in.dim();
  const int64_t d = dim < 0 ? dim + (n ? n : 1) : dim;
  EMBER_KERNEL_CHECK(ctx, (n == 0 && d == 0) || (d >= 0 && d < n), InvalidArgument,
                     "%s: dim %lld out of range for %lld-d", name, static_cast<long long>(dim),
                     static_cast<long long>(n));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, in.sizes()) && in.scalar_type() == out.scalar_type() && in.is_contiguous(),
                     InvalidArgument, "%s: out must match self's shape and dtype", name);
  EMBER_DISPATCH(ctx, name, Mask, in.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    int64_t outer = 1, len = n ? in.size(static_cast<int32_t>(d)) : 1, inner = 1;
    for (int64_t k = 0; k < d; ++k) outer *= in.size(static_cast<int32_t>(k));
    for (int64_t k = d + 1; k < n; ++k) inner *= in.size(static_cast<int32_t>(k));
    // An empty tensor has nothing to write, though its other dims may claim billions of slices to walk (a dim of
    // size 0 elsewhere: kernel_fuzz found the same in glu).
    if (in.numel() == 0) return;
    const T* x = in.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t c = 0; c < inner; ++c) {
        const int64_t base = a * len * inner + c;
        C mx = static_cast<C>(x[base]);
        bool masked = mx == -static_cast<C>(INFINITY);
        for (int64_t k = 1; k < len; ++k) {
          const C v = static_cast<C>(x[base + k * inner]);
          if (v > mx) mx = v;
          masked = masked && v == -static_cast<C>(INFINITY);
        }
        // safe_softmax: a slice that is -inf throughout (a fully masked attention row) is zeros, not NaN.
        if (safe && masked) {
          for (int64_t k = 0; k < len; ++k) o[base + k * inner] = static_cast<T>(0);
          continue;
        }
        C sum = C(0);
        for (int64_t k = 0; k < len; ++k) sum += static_cast<C>(exp(static_cast<C>(x[base + k * inner]) - mx));
        const C lsum = static_cast<C>(::log(sum));
        for (int64_t k = 0; k < len; ++k) {
          const C v = static_cast<C>(x[base + k * inner]) - mx;
          o[base + k * inner] = static_cast<T>(log ? v - lsum : static_cast<C>(exp(v)) / sum);
        }
      }
    }
  });
}

}  // namespace

void softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  softmax_impl<selected_dtypes::softmax_out_portable>(ctx, "_softmax.out", self, dim, half_to_float, false, out);
}

void log_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  softmax_impl<selected_dtypes::log_softmax_out_portable>(ctx, "_log_softmax.out", self, dim, half_to_float, true, out);
}

void safe_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  softmax_impl<selected_dtypes::safe_softmax_out_portable>(ctx, "ember::safe_softmax.out", self, dim, false, false, out,
                                                           true);
}

}  // namespace portable
}  // namespace ember
