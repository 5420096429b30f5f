// Matrix products: mm, addmm (beta * self + alpha * mat1 @ mat2, self broadcast), bmm. Accumulate in the compute
// type (float for Half/BFloat16).
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {}  // namespace

void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, mat1.dim() == 2 && mat2.dim() == 2, InvalidArgument,
                     "addmm.out: mat1 and mat2 must be 2-d, got %d-d and %d-d", static_cast<int>(mat1.dim()),
                     static_cast<int>(mat2.dim()));
  const int64_t M = mat1.size(0), K = mat1.size(1), N = mat2.size(1);
  EMBER_KERNEL_CHECK(ctx, mat2.size(0) == K, InvalidArgument, "addmm.out: mat1 is %lldx%lld but mat2 is %dx%d",
                     static_cast<long long>(M), static_cast<long long>(K), static_cast<int>(mat2.size(0)),
                     static_cast<int>(N));
  const int32_t shape[2] = {static_cast<int32_t>(M), static_cast<int32_t>(N)};
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, 2), InvalidArgument, "addmm.out: out must be %lldx%lld",
                     static_cast<long long>(M), static_cast<long long>(N));
  int32_t bshape[kMaxTensorDim];
  EMBER_KERNEL_CHECK(ctx,
                     broadcast_shape(self.sizes(), ArrayRef<int32_t>(shape, 2), bshape) == 2 && bshape[0] == M &&
                         bshape[1] == N,
                     InvalidArgument, "addmm.out: self does not broadcast to %lldx%lld", static_cast<long long>(M),
                     static_cast<long long>(N));
  EMBER_KERNEL_CHECK(ctx,
                     self.scalar_type() == out.scalar_type() && mat1.scalar_type() == out.scalar_type() &&
                         mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "addmm.out: self, mat1, mat2 and out must share a dtype");
  EMBER_DISPATCH(ctx, "addmm.out", selected_dtypes::addmm_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const C be = beta.to<C>(), al = alpha.to<C>();
    const T* a = mat1.const_data_ptr<T>();
    const T* b = mat2.const_data_ptr<T>();
    const T* s = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    const BroadcastIndexer is(self.sizes(), shape, 2);
    // Row by row, so the accumulator needs N values of stack, not M x N.
    C acc[256];
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n0 = 0; n0 < N; n0 += 256) {
        const int64_t nb = N - n0 < 256 ? N - n0 : 256;
        for (int64_t n = 0; n < nb; ++n) acc[n] = C(0);
        for (int64_t k = 0; k < K; ++k) {
          const C av = static_cast<C>(a[m * K + k]);
          const T* brow = b + k * N + n0;
          for (int64_t n = 0; n < nb; ++n) acc[n] += av * static_cast<C>(brow[n]);
        }
        for (int64_t n = 0; n < nb; ++n) {
          const int64_t i = m * N + n0 + n;
          o[i] = static_cast<T>(be * static_cast<C>(s[is(i)]) + al * acc[n]);
        }
      }
    }
  });
}

void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, self.dim() == 2 && mat2.dim() == 2 && self.size(1) == mat2.size(0), InvalidArgument,
                     "mm.out: cannot multiply %d-d and %d-d (inner sizes must match)", static_cast<int>(self.dim()),
                     static_cast<int>(mat2.dim()));
  const int32_t shape[2] = {self.size(0), mat2.size(1)};
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, 2), InvalidArgument, "mm.out: out must be %dx%d",
                     static_cast<int>(shape[0]), static_cast<int>(shape[1]));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type() && mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "mm.out: self, mat2 and out must share a dtype");
  EMBER_DISPATCH(ctx, "mm.out", selected_dtypes::mm_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const int64_t M = shape[0], K = self.size(1), N = shape[1];
    const T* a = self.const_data_ptr<T>();
    const T* b = mat2.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        C s = C(0);
        for (int64_t k = 0; k < K; ++k) s += static_cast<C>(a[m * K + k]) * static_cast<C>(b[k * N + n]);
        o[m * N + n] = static_cast<T>(s);
      }
    }
  });
}

void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx,
                     self.dim() == 3 && mat2.dim() == 3 && self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1),
                     InvalidArgument, "bmm.out: batch or inner sizes differ");
  const int32_t shape[3] = {self.size(0), self.size(1), mat2.size(2)};
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, 3), InvalidArgument, "bmm.out: out must be %dx%dx%d",
                     static_cast<int>(shape[0]), static_cast<int>(shape[1]), static_cast<int>(shape[2]));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type() && mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "bmm.out: self, mat2 and out must share a dtype");
  EMBER_DISPATCH(ctx, "bmm.out", selected_dtypes::bmm_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const int64_t B = shape[0], M = shape[1], K = self.size(2), N = shape[2];
    for (int64_t b = 0; b < B; ++b) {
      const T* x = self.const_data_ptr<T>() + b * M * K;
      const T* y = mat2.const_data_ptr<T>() + b * K * N;
      T* o = out.mutable_data_ptr<T>() + b * M * N;
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          C s = C(0);
          for (int64_t k = 0; k < K; ++k) s += static_cast<C>(x[m * K + k]) * static_cast<C>(y[k * N + n]);
          o[m * N + n] = static_cast<T>(s);
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
