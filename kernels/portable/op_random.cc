// Random kernels: rand (uniform [0, 1)), randn (standard normal) and native_dropout, on the counter-based
// generator of util/random_util.h (deterministic for a given seed and call order; documented there).
#include <string.h>

#include <type_traits>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/random_util.h"
#include "kernels/portable/util/unary_util.h"

namespace ember {
namespace portable {
namespace {

// As many random bits as T's significand holds, scaled into [0, 1): a wider draw could round up to 1.0 in T.
template <typename T>
T uniform_as(const RandomStream& rs, uint64_t i) {
  if constexpr (std::is_same<T, double>::value) {
    return static_cast<T>(rs.uniform(i));
  } else {
    constexpr int kBits = std::is_same<T, float>::value ? 24 : std::is_same<T, Half>::value ? 11 : 8;
    return static_cast<T>(static_cast<float>(rs.bits(i) >> (64 - kBits)) * (1.0f / static_cast<float>(1u << kBits)));
  }
}

}  // namespace

void rand_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "rand.out: out (rank %d) cannot take the requested shape of rank %zu", static_cast<int>(out.dim()),
                     size.size());
  EMBER_DISPATCH(ctx, "rand.out", selected_dtypes::rand_out_portable & kFloatingTypes, out.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   const RandomStream rs = RandomStream::next();
                   T* o = out.mutable_data_ptr<T>();
                   const int64_t n = out.numel();
                   for (int64_t i = 0; i < n; ++i) o[i] = uniform_as<T>(rs, static_cast<uint64_t>(i));
                 });
}

void randn_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, size.data(), size.size()), InvalidArgument,
                     "randn.out: out (rank %d) cannot take the requested shape of rank %zu",
                     static_cast<int>(out.dim()), size.size());
  EMBER_DISPATCH(ctx, "randn.out", selected_dtypes::randn_out_portable & kFloatingTypes, out.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   const RandomStream rs = RandomStream::next();
                   T* o = out.mutable_data_ptr<T>();
                   const int64_t n = out.numel();
                   for (int64_t i = 0; i < n; ++i)
                     o[i] = static_cast<T>(static_cast<compute_t<T>>(rs.normal(static_cast<uint64_t>(i))));
                 });
}

void native_dropout_out(KernelContext& ctx, const Tensor& input, double p, Optional<bool> train, Tensor& out0,
                        Tensor& out1) {
  // PyTorch trains unless train is given and false; evaluation is the identity with an all-true mask.
  const bool training = !train.has_value() || train.value();
  EMBER_KERNEL_CHECK(ctx, !training || (p >= 0.0 && p <= 1.0), InvalidArgument,
                     "native_dropout.out: p must be in [0, 1], got %g", p);
  EMBER_KERNEL_CHECK(ctx, out1.scalar_type() == ScalarType::Bool, InvalidArgument,
                     "native_dropout.out: the mask (out1) is %s, it must be Bool",
                     scalar_type_name(out1.scalar_type()));
  if (!unary_checks(ctx, "native_dropout.out", input, selected_dtypes::native_dropout_out_portable & kFloatingTypes,
                    true, out0)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out1, input.sizes()) && input.dim_order().equals(out1.dim_order()),
                     InvalidArgument, "native_dropout.out: the mask (out1) must have input's shape and dim order");
  bool* mask = out1.mutable_data_ptr<bool>();
  const int64_t n = input.numel();
  if (!training) {
    if (out0.mutable_data_ptr() != input.const_data_ptr())
      memmove(out0.mutable_data_ptr(), input.const_data_ptr(), input.nbytes());
    for (int64_t i = 0; i < n; ++i) mask[i] = true;
    return;
  }
  EMBER_DISPATCH(ctx, "native_dropout.out", selected_dtypes::native_dropout_out_portable & kFloatingTypes,
                 input.scalar_type(), [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   using C = compute_t<T>;
                   // Kept with probability 1 - p and scaled by 1 / (1 - p) (by 0 when p is 1, as PyTorch).
                   const double keep = 1.0 - p;
                   const C scale = static_cast<C>(keep == 0.0 ? 0.0 : 1.0 / keep);
                   const RandomStream rs = RandomStream::next();
                   const T* x = input.const_data_ptr<T>();
                   T* o = out0.mutable_data_ptr<T>();
                   for (int64_t i = 0; i < n; ++i) {
                     const bool m = rs.uniform(static_cast<uint64_t>(i)) < keep;
                     mask[i] = m;
                     o[i] = static_cast<T>(static_cast<C>(x[i]) * static_cast<C>(m) * scale);
                   }
                 });
}

}  // namespace portable
}  // namespace ember
