// pixel_shuffle and pixel_unshuffle: (*, C*r*r, H, W) <-> (*, C, H*r, W*r), a pure permutation of elements, so one
// byte-copying loop serves every dtype.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

// `shuffle`: small = self (channels C*r*r), big = out; else the other way round. Walks the big tensor's
// (batch, c, h, i, w, j) and copies between it and the small tensor's (batch, c*r*r + i*r + j, h, w).
template <uint32_t Mask>
void shuffle_pixels(KernelContext& ctx, const char* name, const Tensor& self, int64_t r, bool shuffle, Tensor& out) {
  const int dim = static_cast<int>(self.dim());
  EMBER_KERNEL_CHECK(ctx, dim >= 3, InvalidArgument, "%s: input must have at least 3 dims, got %d", name, dim);
  EMBER_KERNEL_CHECK(ctx, r > 0 && r <= 65536, InvalidArgument, "%s: factor %lld must be in [1, 65536]", name,
                     static_cast<long long>(r));
  const int64_t c = self.size(dim - 3), h = self.size(dim - 2), w = self.size(dim - 1);
  int64_t sizes[kMaxTensorDim];
  for (int d = 0; d < dim - 3; ++d) sizes[d] = self.size(d);
  if (shuffle) {
    EMBER_KERNEL_CHECK(ctx, c % (r * r) == 0, InvalidArgument, "%s: %lld channels are not divisible by %lld^2", name,
                       static_cast<long long>(c), static_cast<long long>(r));
    sizes[dim - 3] = c / (r * r);
    sizes[dim - 2] = h * r;
    sizes[dim - 1] = w * r;
  } else {
    EMBER_KERNEL_CHECK(ctx, h % r == 0 && w % r == 0, InvalidArgument,
                       "%s: %lldx%lld is not divisible by the factor %lld", name, static_cast<long long>(h),
                       static_cast<long long>(w), static_cast<long long>(r));
    sizes[dim - 3] = c * r * r;
    sizes[dim - 2] = h / r;
    sizes[dim - 1] = w / r;
  }
  EMBER_KERNEL_CHECK(ctx, fit_output(out, sizes, static_cast<size_t>(dim)), InvalidArgument,
                     "%s: out has rank %d or sizes other than the %s input's", name, static_cast<int>(out.dim()),
                     shuffle ? "shuffled" : "unshuffled");
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous() && out.is_contiguous(), NotSupported,
                     "%s: only contiguous tensors are supported", name);
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type(), InvalidArgument, "%s: self is %s but out is %s",
                     name, scalar_type_name(self.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_DISPATCH(ctx, name, Mask, self.scalar_type(), [&](auto) {});
  const Tensor& small = shuffle ? self : out;
  const int64_t cs = small.size(dim - 3) / (r * r), hs = small.size(dim - 2), ws = small.size(dim - 1);
  const int64_t batch = hs * ws * cs == 0 ? 0 : small.numel() / (cs * r * r * hs * ws);
  const size_t es = self.element_size();
  const uint8_t* src = static_cast<const uint8_t*>(self.const_data_ptr());
  uint8_t* dst = static_cast<uint8_t*>(out.mutable_data_ptr());
  size_t big = 0;  // element index in the big tensor, in memory order
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t ci = 0; ci < cs; ++ci)
      for (int64_t hi = 0; hi < hs; ++hi)
        for (int64_t i = 0; i < r; ++i)
          for (int64_t wi = 0; wi < ws; ++wi)
            for (int64_t j = 0; j < r; ++j, ++big) {
              const size_t s = static_cast<size_t>((((b * cs + ci) * r * r + i * r + j) * hs + hi) * ws + wi);
              if (shuffle) memmove(dst + big * es, src + s * es, es);
              else memmove(dst + s * es, src + big * es, es);
            }
}

}  // namespace

void pixel_shuffle_out(KernelContext& ctx, const Tensor& self, int64_t upscale_factor, Tensor& out) {
  shuffle_pixels<selected_dtypes::pixel_shuffle_out_portable>(ctx, "pixel_shuffle.out", self, upscale_factor, true,
                                                              out);
}

void pixel_unshuffle_out(KernelContext& ctx, const Tensor& self, int64_t downscale_factor, Tensor& out) {
  shuffle_pixels<selected_dtypes::pixel_unshuffle_out_portable>(ctx, "pixel_unshuffle.out", self, downscale_factor,
                                                                false, out);
}

}  // namespace portable
}  // namespace ember
