#include "kernels/portable/util/winograd.h"

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace winograd {

// This file's short name for EMBER_KERNEL_CHECK_OR_FALSE (runtime/kernel/kernel_context.h).
#define CHECK EMBER_KERNEL_CHECK_OR_FALSE

namespace {

// Channels and tiles per side the kernels take: below 2^24 each, the scratch arithmetic (points x channels x tiles,
// and a chunk's products of them) stays far inside int64, whatever shapes a hostile program declares.
constexpr int64_t kMaxExtent = int64_t{1} << 24;

bool within_limits(const WinogradGeometry& g) {
  return g.Cin < kMaxExtent && g.Cout < kMaxExtent && g.tiles_h < kMaxExtent && g.tiles_w < kMaxExtent;
}

}  // namespace

bool winograd_geometry(ArrayRef<int32_t> input, ArrayRef<int32_t> weight, ArrayRef<int64_t> padding,
                       WinogradGeometry& g) {
  if (input.size() != 4 || weight.size() != 3 || padding.size() != 2) return false;
  const int m = tile_for_points(weight[0]);
  if (m == 0 || weight[1] != input[1]) return false;
  // Beyond int32 (as PyTorch refuses for a convolution's padding) the size arithmetic could overflow.
  if (padding[0] < 0 || padding[1] < 0 || padding[0] > INT32_MAX || padding[1] > INT32_MAX) return false;
  g = winograd_geometry(input[0], input[1], weight[2], input[2], input[3], padding[0], padding[1], m);
  return g.OH > 0 && g.OW > 0 && within_limits(g);
}

bool check_winograd_conv2d(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> padding, double min, double max, Tensor& out, WinogradGeometry& g) {
  CHECK(ctx, input.dim() == 4 && weight.dim() == 3, InvalidArgument,
        "winograd_conv2d.out: input must be 4-d and the transformed weight 3-d (got %d-d and %d-d)",
        static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  const int m = tile_for_points(weight.size(0));
  CHECK(ctx, m != 0 && weight.size(1) == input.size(1), InvalidArgument,
        "winograd_conv2d.out: weight must be [16 or 36, %lld, out channels] for %lld input channels (got [%lld, %lld, "
        "%lld])",
        static_cast<long long>(input.size(1)), static_cast<long long>(input.size(1)),
        static_cast<long long>(weight.size(0)), static_cast<long long>(weight.size(1)),
        static_cast<long long>(weight.size(2)));
  CHECK(ctx,
        padding.size() == 2 && padding[0] >= 0 && padding[1] >= 0 && padding[0] <= INT32_MAX && padding[1] <= INT32_MAX,
        InvalidArgument, "winograd_conv2d.out: padding must be two non-negative values below 2^31");
  g = winograd_geometry(input.size(0), input.size(1), weight.size(2), input.size(2), input.size(3), padding[0],
                        padding[1], m);
  CHECK(ctx, g.OH > 0 && g.OW > 0, InvalidArgument,
        "winograd_conv2d.out: a %lldx%lld input padded by [%lld, %lld] is smaller than the 3x3 filter",
        static_cast<long long>(g.H), static_cast<long long>(g.W), static_cast<long long>(g.ph),
        static_cast<long long>(g.pw));
  CHECK(ctx, within_limits(g), InvalidArgument,
        "winograd_conv2d.out: %lld input and %lld output channels over %lldx%lld tiles: each must be below 2^24",
        static_cast<long long>(g.Cin), static_cast<long long>(g.Cout), static_cast<long long>(g.tiles_h),
        static_cast<long long>(g.tiles_w));
  CHECK(ctx, bias == nullptr || (bias->dim() == 1 && bias->size(0) == g.Cout), InvalidArgument,
        "winograd_conv2d.out: bias must have %lld elements", static_cast<long long>(g.Cout));
  // exir never emits a NaN bound (torch.clamp would make every element NaN, not compare-and-select).
  CHECK(ctx, min == min && max == max, InvalidArgument, "winograd_conv2d.out: bounds [%g, %g] include NaN", min, max);
  CHECK(ctx,
        input.scalar_type() == ScalarType::Float && weight.scalar_type() == ScalarType::Float &&
            out.scalar_type() == ScalarType::Float && (bias == nullptr || bias->scalar_type() == ScalarType::Float),
        InvalidArgument, "winograd_conv2d.out: input, weight, bias and out must be Float");
  const int64_t shape[4] = {g.N, g.Cout, g.OH, g.OW};
  CHECK(ctx, portable::fit_output(out, shape, 4), InvalidArgument,
        "winograd_conv2d.out: out must be [%lld, %lld, %lld, %lld]", static_cast<long long>(g.N),
        static_cast<long long>(g.Cout), static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  CHECK(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
        "winograd_conv2d.out: only contiguous (NCHW) tensors are supported");
  return true;
}

}  // namespace winograd
}  // namespace ember
