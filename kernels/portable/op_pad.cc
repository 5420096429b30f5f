// Padding: constant_pad_nd (any number of trailing dims, negative pads crop), reflection_pad{1,2,3}d and
// replication_pad{1,2,3}d. All move elements without arithmetic, so one byte-copying loop serves every dtype:
// only the constant's bit pattern depends on it.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

enum class PadMode { Constant, Reflect, Replicate };

// Input index along a padded dim for output index `o`, or -1 for the constant.
inline int64_t source_index(PadMode mode, int64_t o, int64_t before, int64_t n) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == PadMode::Constant) return -1;
  if (mode == PadMode::Replicate) return i < 0 ? 0 : n - 1;
  return i < 0 ? -i : 2 * (n - 1) - i;  // pads below n keep this inside [0, n)
}

// Pads the last `k` dims of `self` by `pads` (pairs before/after, last dim first) into `out`, whose shape the
// caller checked. `fill` is the constant's bytes (element size).
void pad_copy(const Tensor& self, ArrayRef<int64_t> pads, int k, PadMode mode, const uint8_t* fill, Tensor& out) {
  const int dim = static_cast<int>(self.dim());
  const size_t es = self.element_size();
  const uint8_t* x = static_cast<const uint8_t*>(self.const_data_ptr());
  uint8_t* o = static_cast<uint8_t*>(out.mutable_data_ptr());
  const int64_t total = out.numel();
  if (total == 0) return;
  const int64_t ow = out.size(dim - 1), iw = self.size(dim - 1);
  const int64_t before_w = k > 0 ? pads[0] : 0;
  int64_t before[kMaxTensorDim] = {0};
  for (int j = 0; j < k; ++j) before[dim - 1 - j] = pads[static_cast<size_t>(2 * j)];
  int64_t idx[kMaxTensorDim] = {0};  // output multi-index of the row's first element
  for (int64_t row = 0; row < total / ow; ++row) {
    // The input row (all dims but the last), or none when an outer padded dim falls into the constant.
    int64_t in_row = 0;
    bool in_range = true;
    for (int d = 0; d < dim - 1; ++d) {
      const int64_t s = source_index(d >= dim - k ? mode : PadMode::Constant, idx[d], before[d], self.size(d));
      if (s < 0) in_range = false;
      in_row = in_row * self.size(d) + (s < 0 ? 0 : s);
    }
    uint8_t* orow = o + static_cast<size_t>(row * ow) * es;
    if (!in_range) {
      for (int64_t j = 0; j < ow; ++j) memcpy(orow + static_cast<size_t>(j) * es, fill, es);
    } else {
      const uint8_t* xrow = x + static_cast<size_t>(in_row * iw) * es;
      int64_t j = 0;
      // The run of the row copied from the input in one piece.
      const int64_t lo = before_w > 0 ? before_w : 0;
      const int64_t hi = before_w + iw < ow ? before_w + iw : ow;
      for (; j < lo && j < ow; ++j) {
        const int64_t s = source_index(mode, j, before_w, iw);
        memmove(orow + static_cast<size_t>(j) * es, s < 0 ? fill : xrow + static_cast<size_t>(s) * es, es);
      }
      if (hi > j) {
        memmove(orow + static_cast<size_t>(j) * es, xrow + static_cast<size_t>(j - before_w) * es,
                static_cast<size_t>(hi - j) * es);
        j = hi;
      }
      for (; j < ow; ++j) {
        const int64_t s = source_index(mode, j, before_w, iw);
        memmove(orow + static_cast<size_t>(j) * es, s < 0 ? fill : xrow + static_cast<size_t>(s) * es, es);
      }
    }
    for (int d = dim - 2; d >= 0; --d) {
      if (++idx[d] < out.size(d)) break;
      idx[d] = 0;
    }
  }
}

// Checks and output shape of a pad over the last `k` dims; fills `sizes`. Returns false after failing ctx.
bool check_pad(KernelContext& ctx, const char* name, const Tensor& self, ArrayRef<int64_t> pads, int k, PadMode mode,
               int min_dim, Tensor& out) {
  const int dim = static_cast<int>(self.dim());
  if (pads.size() != static_cast<size_t>(2 * k) || dim < min_dim || dim > min_dim + 1 || dim < k) {
    EMBER_LOG(ERROR, "%s: %d pad values for a %d-d input (need %d values and a %d-d or %d-d input)", name,
              static_cast<int>(pads.size()), dim, 2 * k, min_dim, min_dim + 1);
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  int64_t sizes[kMaxTensorDim];
  for (int d = 0; d < dim; ++d) sizes[d] = self.size(d);
  for (int j = 0; j < k; ++j) {
    const int d = dim - 1 - j;
    const int64_t n = self.size(d), l = pads[static_cast<size_t>(2 * j)], r = pads[static_cast<size_t>(2 * j + 1)];
    // Pads beyond int32 are refused (as PyTorch's sizes are), which keeps n + l + r exact.
    bool ok = l >= INT32_MIN && l <= INT32_MAX && r >= INT32_MIN && r <= INT32_MAX;
    if (ok && mode == PadMode::Reflect) ok = l < n && r < n;
    if (ok && mode != PadMode::Constant) ok = n > 0 && n + l + r > 0;
    if (ok) ok = n + l + r >= 0;
    if (!ok) {
      EMBER_LOG(ERROR, "%s: padding (%lld, %lld) does not fit dimension %d of size %lld%s", name,
                static_cast<long long>(l), static_cast<long long>(r), d, static_cast<long long>(n),
                mode == PadMode::Reflect ? " (reflection pads must be smaller than the dimension)" : "");
      ctx.fail(Error::InvalidArgument);
      return false;
    }
    sizes[d] = n + l + r;
  }
  if (mode != PadMode::Constant) {
    for (int d = 0; d < dim - k; ++d) {
      if (self.size(d) == 0) {
        EMBER_LOG(ERROR, "%s: dimension %d is empty", name, d);
        ctx.fail(Error::InvalidArgument);
        return false;
      }
    }
  }
  if (!fit_output(out, sizes, static_cast<size_t>(dim))) {
    EMBER_LOG(ERROR, "%s: out has rank %d or sizes other than the padded input's", name, static_cast<int>(out.dim()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  if (!self.is_contiguous() || !out.is_contiguous()) {
    EMBER_LOG(ERROR, "%s: only contiguous tensors are supported", name);
    ctx.fail(Error::NotSupported);
    return false;
  }
  if (self.scalar_type() != out.scalar_type()) {
    EMBER_LOG(ERROR, "%s: self is %s but out is %s", name, scalar_type_name(self.scalar_type()),
              scalar_type_name(out.scalar_type()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  return true;
}

template <uint32_t Mask>
void pad_nd(KernelContext& ctx, const char* name, const Tensor& self, ArrayRef<int64_t> pads, int k, PadMode mode,
            Tensor& out) {
  if (!check_pad(ctx, name, self, pads, k, mode, k + 1, out)) return;
  // The mask decides which dtypes this build admits; the copy itself only needs the element size.
  EMBER_DISPATCH(ctx, name, Mask, self.scalar_type(), [&](auto) {});
  const uint8_t unused[8] = {0};
  pad_copy(self, pads, k, mode, unused, out);
}

}  // namespace

void constant_pad_nd_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> pad, const Scalar& value,
                         Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, pad.size() % 2 == 0 && pad.size() / 2 <= static_cast<size_t>(self.dim()), InvalidArgument,
                     "constant_pad_nd.out: %d pad values for a %d-d input (need pairs, at most "
                     "two per dimension)",
                     static_cast<int>(pad.size()), static_cast<int>(self.dim()));
  const int k = static_cast<int>(pad.size() / 2);
  if (!check_pad(ctx, "constant_pad_nd.out", self, pad, k, PadMode::Constant, self.dim() > 0 ? self.dim() - 1 : 0, out))
    return;
  uint8_t fill[8] = {0};
  EMBER_DISPATCH(ctx, "constant_pad_nd.out", selected_dtypes::constant_pad_nd_out_portable, self.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   const T v = static_cast<T>(value.to<compute_t<T>>());
                   memcpy(fill, &v, sizeof(T));
                 });
  if (self.dim() == 0) {
    memmove(out.mutable_data_ptr(), self.const_data_ptr(), self.element_size());
    return;
  }
  pad_copy(self, pad, k, PadMode::Constant, fill, out);
}

void reflection_pad1d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out) {
  pad_nd<selected_dtypes::reflection_pad1d_out_portable>(ctx, "reflection_pad1d.out", self, padding, 1,
                                                         PadMode::Reflect, out);
}
void reflection_pad2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out) {
  pad_nd<selected_dtypes::reflection_pad2d_out_portable>(ctx, "reflection_pad2d.out", self, padding, 2,
                                                         PadMode::Reflect, out);
}
void reflection_pad3d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out) {
  pad_nd<selected_dtypes::reflection_pad3d_out_portable>(ctx, "reflection_pad3d.out", self, padding, 3,
                                                         PadMode::Reflect, out);
}
void replication_pad1d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out) {
  pad_nd<selected_dtypes::replication_pad1d_out_portable>(ctx, "replication_pad1d.out", self, padding, 1,
                                                          PadMode::Replicate, out);
}
void replication_pad2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out) {
  pad_nd<selected_dtypes::replication_pad2d_out_portable>(ctx, "replication_pad2d.out", self, padding, 2,
                                                          PadMode::Replicate, out);
}
void replication_pad3d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out) {
  pad_nd<selected_dtypes::replication_pad3d_out_portable>(ctx, "replication_pad3d.out", self, padding, 3,
                                                          PadMode::Replicate, out);
}

}  // namespace portable
}  // namespace ember
