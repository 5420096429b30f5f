// Matrix products on the tiled GEMM: mm, addmm (a bias row or column is fused into the GEMM's epilogue; any other
// broadcast of self is added after), bmm. Float only; other dtypes go to portable.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/gemm.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {

void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  if (!computes_float(selected_dtypes::mm_out_optimized, out)) return portable::mm_out(ctx, self, mat2, out);
  EMBER_KERNEL_CHECK(ctx, self.dim() == 2 && mat2.dim() == 2 && self.size(1) == mat2.size(0), InvalidArgument,
                     "mm.out: cannot multiply %d-d and %d-d (inner sizes must match)", static_cast<int>(self.dim()),
                     static_cast<int>(mat2.dim()));
  const int32_t shape[2] = {self.size(0), mat2.size(1)};
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, shape, 2), InvalidArgument, "mm.out: out must be %dx%d",
                     static_cast<int>(shape[0]), static_cast<int>(shape[1]));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type() && mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "mm.out: self, mat2 and out must share a dtype");
  Gemm g;
  g.M = shape[0], g.N = shape[1], g.K = self.size(1);
  g.a = self.const_data_ptr<float>(), g.lda = g.K;
  g.b = mat2.const_data_ptr<float>(), g.ldb = g.N;
  g.c = out.mutable_data_ptr<float>(), g.ldc = g.N;
  sgemm(g, ctx.threads());
}

void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out) {
  if (!computes_float(selected_dtypes::addmm_out_optimized, out)) {
    return portable::addmm_out(ctx, self, mat1, mat2, beta, alpha, out);
  }
  EMBER_KERNEL_CHECK(ctx, mat1.dim() == 2 && mat2.dim() == 2, InvalidArgument,
                     "addmm.out: mat1 and mat2 must be 2-d, got %d-d and %d-d", static_cast<int>(mat1.dim()),
                     static_cast<int>(mat2.dim()));
  const int32_t M = mat1.size(0), K = mat1.size(1), N = mat2.size(1);
  EMBER_KERNEL_CHECK(ctx, mat2.size(0) == K, InvalidArgument, "addmm.out: mat1 is %dx%d but mat2 is %dx%d",
                     static_cast<int>(M), static_cast<int>(K), static_cast<int>(mat2.size(0)), static_cast<int>(N));
  const int32_t shape[2] = {M, N};
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, shape, 2), InvalidArgument, "addmm.out: out must be %dx%d",
                     static_cast<int>(M), static_cast<int>(N));
  int32_t bshape[kMaxTensorDim];
  EMBER_KERNEL_CHECK(ctx,
                     portable::broadcast_shape(self.sizes(), ArrayRef<int32_t>(shape, 2), bshape) == 2 &&
                         bshape[0] == M && bshape[1] == N,
                     InvalidArgument, "addmm.out: self does not broadcast to %dx%d", static_cast<int>(M),
                     static_cast<int>(N));
  EMBER_KERNEL_CHECK(ctx,
                     self.scalar_type() == out.scalar_type() && mat1.scalar_type() == out.scalar_type() &&
                         mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "addmm.out: self, mat1, mat2 and out must share a dtype");
  const float be = beta.to<float>();
  Gemm g;
  g.M = M, g.N = N, g.K = K;
  g.a = mat1.const_data_ptr<float>(), g.lda = K;
  g.b = mat2.const_data_ptr<float>(), g.ldb = N;
  g.c = out.mutable_data_ptr<float>(), g.ldc = N;
  g.alpha = alpha.to<float>();
  const float* s = self.const_data_ptr<float>();
  // linear's bias is a row of N (self [N] or [1, N]); a column of M ([M, 1]) is the other cheap case.
  const int64_t sn = self.numel();
  const bool row_of_n = sn == N && (self.dim() == 1 || (self.dim() == 2 && self.size(0) == 1));
  const bool col_of_m = self.dim() == 2 && self.size(0) == M && self.size(1) == 1;
  if (be == 1.0f && row_of_n) {
    g.col_bias = s;
    return sgemm(g, ctx.threads());
  }
  if (be == 1.0f && col_of_m) {
    g.row_bias = s;
    return sgemm(g, ctx.threads());
  }
  sgemm(g, ctx.threads());
  if (be == 0.0f) return;  // ATen: beta 0 ignores self, NaNs included
  float* o = g.c;
  const portable::BroadcastIndexer is(self.sizes(), shape, 2);
  for (int64_t i = 0; i < static_cast<int64_t>(M) * N; ++i) o[i] += be * s[is(i)];
}

void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  if (!computes_float(selected_dtypes::bmm_out_optimized, out)) return portable::bmm_out(ctx, self, mat2, out);
  EMBER_KERNEL_CHECK(ctx,
                     self.dim() == 3 && mat2.dim() == 3 && self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1),
                     InvalidArgument, "bmm.out: batch or inner sizes differ");
  const int32_t shape[3] = {self.size(0), self.size(1), mat2.size(2)};
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, shape, 3), InvalidArgument, "bmm.out: out must be %dx%dx%d",
                     static_cast<int>(shape[0]), static_cast<int>(shape[1]), static_cast<int>(shape[2]));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type() && mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "bmm.out: self, mat2 and out must share a dtype");
  const int64_t B = shape[0], M = shape[1], K = self.size(2), N = shape[2];
  Gemm g;
  g.M = M, g.N = N, g.K = K, g.lda = K, g.ldb = N, g.ldc = N;
  for (int64_t b = 0; b < B; ++b) {
    g.a = self.const_data_ptr<float>() + b * M * K;
    g.b = mat2.const_data_ptr<float>() + b * K * N;
    g.c = out.mutable_data_ptr<float>() + b * M * N;
    sgemm(g, ctx.threads());
  }
}

}  // namespace optimized
}  // namespace ember
