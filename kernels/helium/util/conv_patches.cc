// The patches path of the Helium int8 convolution (util/conv_plan.h): output pixels' taps gathered into contiguous
// patches, eight pixels at a time, then four output channels at a time meet each patch in VMLADAVA dot products
// (util/dot.h); each channel's eight sums are then finished together (util/finish_row.h). Two passes, so that
// neither loop needs more than the M55's eight vector registers.
#include <arm_mve.h>

#include "kernels/helium/util/bytes.h"
#include "kernels/helium/util/channel_block.h"
#include "kernels/helium/util/conv_call.h"
#include "kernels/helium/util/dot.h"
#include "kernels/helium/util/finish_row.h"

namespace ember {
namespace helium {
namespace {

// The patch of output pixel (oh, ow) in group g: taps in the weight's (ci, kh, kw) order, the zero point where
// they fall outside the input.
void gather_patch(const ConvCall& k, int32_t g, int32_t oh, int32_t ow, int8_t* patch) {
  const ConvShape& s = k.s;
  const int8_t zp = static_cast<int8_t>(k.q->header.input_zero_point);
  const int32_t iw0 = ow * s.sw - s.pw;
  const bool row_inside = iw0 >= 0 && iw0 + (s.KW - 1) * s.dw < s.W;
  for (int32_t ci = 0; ci < s.Cg; ++ci) {
    const int8_t* xc = k.x + (g * s.Cg + ci) * s.H * s.W;
    for (int32_t kh = 0; kh < s.KH; ++kh, patch += s.KW) {
      const int32_t ih = oh * s.sh - s.ph + kh * s.dh;
      if (ih < 0 || ih >= s.H) {
        fill_bytes(patch, zp, s.KW);
        continue;
      }
      const int8_t* xr = xc + ih * s.W;
      if (row_inside && s.dw == 1) {
        copy_bytes(patch, xr + iw0, s.KW);
        continue;
      }
      for (int32_t kw = 0; kw < s.KW; ++kw) {
        const int32_t iw = iw0 + kw * s.dw;
        patch[kw] = iw >= 0 && iw < s.W ? xr[iw] : zp;
      }
    }
  }
}

// A 1x1 convolution at unit stride without padding reads pixel p's channels at p in every plane: the patches of
// eight neighbouring pixels are the transpose of an 8-column strip of the input, moved eight bytes per load and
// eight per scatter store.
void transpose_strip(const ConvCall& k, int32_t g, int32_t p0, int8_t* patches) {
  const ConvShape& s = k.s;
  const int32_t plane = s.H * s.W;
  const uint16x8_t offsets = vmulq_n_u16(vidupq_n_u16(0, 1), static_cast<uint16_t>(s.Cg));
  const int8_t* xg = k.x + g * s.Cg * plane + p0;
  for (int32_t ci = 0; ci < s.Cg; ++ci) {
    vstrbq_scatter_offset_s16(patches + ci, offsets, vldrbq_s16(xg + ci * plane));
  }
}

void gather_patches(const ConvCall& k, int32_t g, int32_t p0, int32_t count, int8_t* patches, bool pointwise) {
  const ConvShape& s = k.s;
  const int32_t taps = s.Cg * s.KH * s.KW;
  int32_t i = 0;
  // Whole strips of eight pixels by transposition; the scatter's offsets are 16-bit, so seven patches apart must
  // fit.
  if (pointwise && 7 * s.Cg <= UINT16_MAX) {
    for (; i + 8 <= count; i += 8) transpose_strip(k, g, p0 + i, patches + i * taps);
  }
  for (; i < count; ++i) {
    const int32_t p = p0 + i;
    gather_patch(k, g, p / s.OW, p % s.OW, patches + i * taps);
  }
}

// Four output channels' sums (oc0.., n of them real) over `count` patches, into sums[j][i] for channel oc0 + j
// and pixel i: channel-major, so each channel's row of sums is finished with contiguous stores.
void patches_times_channels(const ConvCall& k, int32_t oc0, int32_t n, int32_t count, const int8_t* patches,
                            int32_t taps, int32_t (*sums)[kMaxPatchPixels]) {
  const int8_t* w0 = k.w + oc0 * taps;
  const int8_t* w1 = n > 1 ? w0 + taps : w0;
  const int8_t* w2 = n > 2 ? w0 + 2 * taps : w1;
  const int8_t* w3 = n > 3 ? w0 + 3 * taps : w2;
  if (taps <= 16) {
    // A patch is one vector (MobileNet's narrow 1x1 layers): the four weight rows stay in registers and each pixel
    // is one load and four VMLADAV.
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(taps));
    const int8x16_t v0 = vldrbq_z_s8(w0, p), v1 = vldrbq_z_s8(w1, p), v2 = vldrbq_z_s8(w2, p), v3 = vldrbq_z_s8(w3, p);
    for (int32_t i = 0; i < count; ++i) {
      const int8x16_t x = vldrbq_z_s8(patches + i * taps, p);
      sums[0][i] = vmladavq_s8(x, v0);
      sums[1][i] = vmladavq_s8(x, v1);
      sums[2][i] = vmladavq_s8(x, v2);
      sums[3][i] = vmladavq_s8(x, v3);
    }
    return;
  }
  for (int32_t i = 0; i < count; ++i) {
    const Sums4 s = dot4(patches + i * taps, w0, w1, w2, w3, taps);
    sums[0][i] = s.s0;
    sums[1][i] = s.s1;
    sums[2][i] = s.s2;
    sums[3][i] = s.s3;
  }
}

}  // namespace

void run_patches(const ConvCall& k, const ConvPlan& plan) {
  const ConvShape& s = k.s;
  int8_t* patches = reinterpret_cast<int8_t*>(k.scratch);
  int32_t sums[4][kMaxPatchPixels];
  const bool pointwise = s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0;
  const int32_t out_plane = s.OH * s.OW, per_group = s.OC / s.groups;
  for (int32_t g = 0; g < s.groups; ++g) {
    for (int32_t p0 = 0; p0 < out_plane; p0 += plan.patch_pixels) {
      const int32_t count = out_plane - p0 < plan.patch_pixels ? out_plane - p0 : plan.patch_pixels;
      gather_patches(k, g, p0, count, patches, pointwise);
      for (int32_t oc0 = g * per_group; oc0 < (g + 1) * per_group; oc0 += 4) {
        const int32_t n = (g + 1) * per_group - oc0 < 4 ? (g + 1) * per_group - oc0 : 4;
        patches_times_channels(k, oc0, n, count, patches, plan.taps, sums);
        for (int32_t j = 0; j < n; ++j) {
          const int32_t oc = oc0 + j;
          const int64_t wide = k.q->corrections_fit() ? 0
                                                      : wide_correction(k.w + oc * plan.taps, plan.taps, k.bias, oc,
                                                                        k.q->header.input_zero_point);
          finish_row(sums[j], count, *k.q, oc, wide, k.o + oc * out_plane + p0);
        }
      }
    }
  }
}

}  // namespace helium
}  // namespace ember
