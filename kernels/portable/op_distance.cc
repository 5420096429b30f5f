// p-norm distances between rows: _cdist_forward.out (every row of x1 against every row of x2, batch dims
// broadcast) and _pdist_forward.out (every pair i < j of one matrix's rows, in row-major order). p = 0 counts the
// differing coordinates, p = inf takes the largest difference; Float and Double, as ATen on CPU.
#include <math.h>

#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// The p-norm of a - b over m coordinates, accumulated in C.
template <typename C>
C distance(const C* a, const C* b, int64_t m, double p) {
  C acc = C(0);
  if (p == 0.0) {
    for (int64_t i = 0; i < m; ++i) acc += a[i] != b[i] ? C(1) : C(0);
    return acc;
  }
  if (p == 1.0) {
    for (int64_t i = 0; i < m; ++i) acc += static_cast<C>(fabs(a[i] - b[i]));
    return acc;
  }
  if (p == 2.0) {
    for (int64_t i = 0; i < m; ++i) acc += (a[i] - b[i]) * (a[i] - b[i]);
    return static_cast<C>(sqrt(acc));
  }
  if (isinf(p)) {
    for (int64_t i = 0; i < m; ++i) {
      const C d = static_cast<C>(fabs(a[i] - b[i]));
      // NaN propagates, as through ATen's max.
      if (d > acc || d != d) acc = d;
      if (acc != acc) break;
    }
    return acc;
  }
  for (int64_t i = 0; i < m; ++i) acc += static_cast<C>(pow(fabs(a[i] - b[i]), static_cast<C>(p)));
  return static_cast<C>(pow(acc, static_cast<C>(1.0 / p)));
}

}  // namespace

void cdist_forward_out(KernelContext& ctx, const Tensor& x1, const Tensor& x2, double p, Optional<int64_t> compute_mode,
                       Tensor& out) {
  const int32_t r1 = x1.dim(), r2 = x2.dim();
  EMBER_KERNEL_CHECK(ctx, r1 >= 2 && r2 >= 2, InvalidArgument,
                     "_cdist_forward.out: x1 and x2 must be at least 2-d "
                     "(got %d and %d)",
                     static_cast<int>(r1), static_cast<int>(r2));
  const int32_t m = x1.size(r1 - 1);
  EMBER_KERNEL_CHECK(ctx, x2.size(r2 - 1) == m, InvalidArgument, "_cdist_forward.out: x1 has %d columns, x2 %d",
                     static_cast<int>(m), static_cast<int>(x2.size(r2 - 1)));
  EMBER_KERNEL_CHECK(ctx, p >= 0.0, InvalidArgument, "_cdist_forward.out: p must be non-negative (got %g)", p);
  // compute_mode picks ATen's matrix-product shortcut for p = 2; the direct sum computes the same distances.
  EMBER_KERNEL_CHECK(ctx, !compute_mode.has_value() || (compute_mode.value() >= 0 && compute_mode.value() <= 2),
                     InvalidArgument, "_cdist_forward.out: compute_mode %lld is not 0, 1 or 2",
                     static_cast<long long>(compute_mode.has_value() ? compute_mode.value() : 0));
  int32_t batch[kMaxTensorDim];
  const int nb = broadcast_shape(ArrayRef<int32_t>(x1.sizes().data(), static_cast<size_t>(r1 - 2)),
                                 ArrayRef<int32_t>(x2.sizes().data(), static_cast<size_t>(r2 - 2)), batch);
  EMBER_KERNEL_CHECK(ctx, nb >= 0 && nb + 2 <= kMaxTensorDim, InvalidArgument,
                     "_cdist_forward.out: the batch dims of x1 and x2 do not broadcast");
  const int32_t rows1 = x1.size(r1 - 2), rows2 = x2.size(r2 - 2);
  int32_t shape[kMaxTensorDim];
  for (int i = 0; i < nb; ++i) shape[i] = batch[i];
  shape[nb] = rows1;
  shape[nb + 1] = rows2;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(nb + 2)), InvalidArgument,
                     "_cdist_forward.out: out must be [batch..., %d, %d]", static_cast<int>(rows1),
                     static_cast<int>(rows2));
  const ScalarType st = x1.scalar_type();
  EMBER_KERNEL_CHECK(ctx, x2.scalar_type() == st && out.scalar_type() == st, InvalidArgument,
                     "_cdist_forward.out: x2 and out must be %s like x1", scalar_type_name(st));
  EMBER_KERNEL_CHECK(ctx, x1.is_contiguous() && x2.is_contiguous(), NotSupported,
                     "_cdist_forward.out: x1 and x2 must be contiguous");
  EMBER_DISPATCH(ctx, "_cdist_forward.out", selected_dtypes::cdist_forward_out_portable, st, [&](auto tag) {
    using T = typename decltype(tag)::type;
    static_assert(std::is_same<T, compute_t<T>>::value, "cdist computes in its own dtype (Float or Double)");
    // Nothing to write; an empty x1 or x2 may still broadcast to many batches (kernel_fuzz at 53bbabd).
    if (out.numel() == 0) return;
    const BroadcastIndexer i1(ArrayRef<int32_t>(x1.sizes().data(), static_cast<size_t>(r1 - 2)), batch, nb);
    const BroadcastIndexer i2(ArrayRef<int32_t>(x2.sizes().data(), static_cast<size_t>(r2 - 2)), batch, nb);
    int64_t nbatch = 1;
    for (int i = 0; i < nb; ++i) nbatch *= batch[i];
    const int64_t mat1 = static_cast<int64_t>(rows1) * m, mat2 = static_cast<int64_t>(rows2) * m;
    const T* a = x1.const_data_ptr<T>();
    const T* b = x2.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t n = 0; n < nbatch; ++n) {
      const T* an = a + i1(n) * mat1;
      const T* bn = b + i2(n) * mat2;
      for (int64_t i = 0; i < rows1; ++i) {
        for (int64_t j = 0; j < rows2; ++j) *o++ = distance<T>(an + i * m, bn + j * m, m, p);
      }
    }
  });
}

void pdist_forward_out(KernelContext& ctx, const Tensor& self, double p, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, self.dim() == 2, InvalidArgument, "_pdist_forward.out: self must be 2-d (got %d-d)",
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, p >= 0.0, InvalidArgument, "_pdist_forward.out: p must be non-negative (got %g)", p);
  const int64_t rows = self.size(0), m = self.size(1);
  const int64_t pairs = rows > 1 ? rows * (rows - 1) / 2 : 0;
  EMBER_KERNEL_CHECK(ctx, fit_output(out, &pairs, 1), InvalidArgument, "_pdist_forward.out: out must be [%lld]",
                     static_cast<long long>(pairs));
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "_pdist_forward.out: out must be %s like self", scalar_type_name(self.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous(), NotSupported, "_pdist_forward.out: self must be contiguous");
  EMBER_DISPATCH(ctx, "_pdist_forward.out", selected_dtypes::pdist_forward_out_portable, self.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   static_assert(std::is_same<T, compute_t<T>>::value,
                                 "pdist computes in its own dtype (Float or Double)");
                   const T* x = self.const_data_ptr<T>();
                   T* o = out.mutable_data_ptr<T>();
                   for (int64_t i = 0; i < rows; ++i) {
                     for (int64_t j = i + 1; j < rows; ++j) *o++ = distance<T>(x + i * m, x + j * m, m, p);
                   }
                 });
}

}  // namespace portable
}  // namespace ember
