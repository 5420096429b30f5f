// mm.out, bmm.out and addmm.out for Float on MVE: each output row is the input row times the [K, N] matrix,
// computed in row blocks (util/gemm_f32.h) of up to 28 columns, the matrix read a row at a time where it lies.
// addmm computes linear's form (beta 1, alpha 1, self a bias row of N, which seeds the sums); other betas, alphas
// and broadcasts of self go to portable. Checks and messages are portable's.
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/gemm_f32.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace helium {
namespace {

constexpr int kMaxVectors = 7;

// The predicate of vector j's real columns (none past the last).
inline mve_pred16_t columns(int32_t cols, int j) {
  const int32_t left = cols - 4 * j;
  return vctp32q(static_cast<uint32_t>(left < 0 ? 0 : left));
}

// Columns [n0, n0 + 4V) of one output row, `cols` of them real: the rest compute and are not stored.
template <int V>
void column_block(const float* a, const float* b, int32_t K, int32_t N, const float* bias, float* o, int32_t n0,
                  int32_t cols) {
  ColumnSums s;
  for (int j = 0; j < kMaxVectors; ++j) {
    s.v[j] = bias != nullptr ? vldrwq_z_f32(bias + n0 + 4 * j, columns(cols, j)) : vdupq_n_f32(0.0f);
  }
  // Rows in whole vectors: a vector past the row's end reads the next row's start, so the last row (and, for a
  // matrix narrower than the columns read past its rows, every row) takes predicated loads instead, and nothing
  // past the matrix is read.
  const int32_t whole = K > 0 && 4 * V - cols <= N ? K - 1 : 0;
  row_block_steps<V>(a, b + n0, N * 4, whole, s);
  for (int32_t k = whole; k < K; ++k) {
    const float* row = b + static_cast<intptr_t>(k) * N + n0;
    for (int j = 0; j < V; ++j) s.v[j] = vfmaq_n_f32(s.v[j], vldrwq_z_f32(row + 4 * j, columns(cols, j)), a[k]);
  }
  for (int j = 0; j < V; ++j) vstrwq_p_f32(o + n0 + 4 * j, s.v[j], columns(cols, j));
}

// o[0, N) = bias + a[0, K) times b [K, N]. A last block narrower than seven vectors runs as four, two or one:
// the widths in between would cost flash for one block per row, and its vectors past N compute and are not
// stored (rows but the last read into the next row, never past the matrix).
void row_times_matrix(const float* a, const float* b, int32_t K, int32_t N, const float* bias, float* o) {
  for (int32_t n0 = 0; n0 < N; n0 += 4 * kMaxVectors) {
    const int32_t cols = N - n0 < 4 * kMaxVectors ? N - n0 : 4 * kMaxVectors;
    if (cols > 16) {
      column_block<7>(a, b, K, N, bias, o, n0, cols);
    } else if (cols > 8) {
      column_block<4>(a, b, K, N, bias, o, n0, cols);
    } else if (cols > 4) {
      column_block<2>(a, b, K, N, bias, o, n0, cols);
    } else {
      column_block<1>(a, b, K, N, bias, o, n0, cols);
    }
  }
}

void matrix_product(const float* a, const float* b, int64_t M, int64_t K, int64_t N, const float* bias, float* o) {
  for (int64_t m = 0; m < M; ++m) {
    row_times_matrix(a + m * K, b, static_cast<int32_t>(K), static_cast<int32_t>(N), bias, o + m * N);
  }
}

bool is_float(uint32_t mask, const Tensor& t) {
  return t.scalar_type() == ScalarType::Float && (mask & dtype_bit(ScalarType::Float)) != 0;
}

// Row distances in bytes are 32-bit in the row blocks: every operand under 2^31 bytes (far beyond the board).
bool fits_32bit(const Tensor& t) { return t.numel() <= INT32_MAX / static_cast<int64_t>(sizeof(float)); }

}  // namespace

void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  if (!is_float(selected_dtypes::mm_out_helium, out)) return portable::mm_out(ctx, self, mat2, out);
  EMBER_KERNEL_CHECK(ctx, self.dim() == 2 && mat2.dim() == 2 && self.size(1) == mat2.size(0), InvalidArgument,
                     "mm.out: cannot multiply %d-d and %d-d (inner sizes must match)", static_cast<int>(self.dim()),
                     static_cast<int>(mat2.dim()));
  const int32_t shape[2] = {self.size(0), mat2.size(1)};
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, shape, 2), InvalidArgument, "mm.out: out must be %dx%d",
                     static_cast<int>(shape[0]), static_cast<int>(shape[1]));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type() && mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "mm.out: self, mat2 and out must share a dtype");
  EMBER_KERNEL_CHECK(ctx, fits_32bit(mat2), NotSupported, "mm.out: mat2 of over 2^31 bytes");
  matrix_product(self.const_data_ptr<float>(), mat2.const_data_ptr<float>(), shape[0], self.size(1), shape[1], nullptr,
                 out.mutable_data_ptr<float>());
}

void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  if (!is_float(selected_dtypes::bmm_out_helium, out)) return portable::bmm_out(ctx, self, mat2, out);
  EMBER_KERNEL_CHECK(ctx,
                     self.dim() == 3 && mat2.dim() == 3 && self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1),
                     InvalidArgument, "bmm.out: batch or inner sizes differ");
  const int32_t shape[3] = {self.size(0), self.size(1), mat2.size(2)};
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, shape, 3), InvalidArgument, "bmm.out: out must be %dx%dx%d",
                     static_cast<int>(shape[0]), static_cast<int>(shape[1]), static_cast<int>(shape[2]));
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type() && mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "bmm.out: self, mat2 and out must share a dtype");
  EMBER_KERNEL_CHECK(ctx, fits_32bit(mat2), NotSupported, "bmm.out: mat2 of over 2^31 bytes");
  const int64_t B = shape[0], M = shape[1], K = self.size(2), N = shape[2];
  for (int64_t i = 0; i < B; ++i) {
    matrix_product(self.const_data_ptr<float>() + i * M * K, mat2.const_data_ptr<float>() + i * K * N, M, K, N, nullptr,
                   out.mutable_data_ptr<float>() + i * M * N);
  }
}

void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out) {
  // linear's form: self a bias row of N ([N] or [1, N]) added once, no scaling. Anything else is portable's.
  const int64_t N = mat2.dim() == 2 ? mat2.size(1) : -1;
  const bool bias_row = self.numel() == N && (self.dim() == 1 || (self.dim() == 2 && self.size(0) == 1));
  if (!is_float(selected_dtypes::addmm_out_helium, out) || !bias_row || beta.to_double() != 1.0 ||
      alpha.to_double() != 1.0) {
    return portable::addmm_out(ctx, self, mat1, mat2, beta, alpha, out);
  }
  EMBER_KERNEL_CHECK(ctx, mat1.dim() == 2 && mat2.dim() == 2, InvalidArgument,
                     "addmm.out: mat1 and mat2 must be 2-d, got %d-d and %d-d", static_cast<int>(mat1.dim()),
                     static_cast<int>(mat2.dim()));
  const int32_t M = mat1.size(0), K = mat1.size(1);
  EMBER_KERNEL_CHECK(ctx, mat2.size(0) == K, InvalidArgument, "addmm.out: mat1 is %lldx%lld but mat2 is %dx%d",
                     static_cast<long long>(M), static_cast<long long>(K), static_cast<int>(mat2.size(0)),
                     static_cast<int>(N));
  const int32_t shape[2] = {M, static_cast<int32_t>(N)};
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, shape, 2), InvalidArgument, "addmm.out: out must be %lldx%lld",
                     static_cast<long long>(M), static_cast<long long>(N));
  EMBER_KERNEL_CHECK(ctx,
                     self.scalar_type() == out.scalar_type() && mat1.scalar_type() == out.scalar_type() &&
                         mat2.scalar_type() == out.scalar_type(),
                     InvalidArgument, "addmm.out: self, mat1, mat2 and out must share a dtype");
  EMBER_KERNEL_CHECK(ctx, fits_32bit(mat2), NotSupported, "addmm.out: mat2 of over 2^31 bytes");
  matrix_product(mat1.const_data_ptr<float>(), mat2.const_data_ptr<float>(), M, K, N, self.const_data_ptr<float>(),
                 out.mutable_data_ptr<float>());
}

}  // namespace helium
}  // namespace ember
