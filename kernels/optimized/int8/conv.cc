#include "kernels/optimized/int8/conv.h"

#include <string.h>

#include "kernels/optimized/int8/tier_kernels.h"
#include "kernels/quantized/util/requantize.h"
#include "runtime/core/result.h"

namespace ember {
namespace optimized {
namespace {

// Bytes of gathered panel a GEMM call works from: the register tiles' share of it stays in L1 while every weight
// block passes over it, and the whole panel in L2.
constexpr size_t kPanelBudget = 128 * 1024;

// Whether the depthwise kernels of `level` can build windows for stride sw and dilation dw (tier_kernels.h): a
// vector of windows comes from one load, each 128-bit lane's four windows from the 16 bytes it starts at, and the
// groups of a kernel row lie a whole number of windows apart.
bool depthwise_fits(const Int8ConvShape& s, Int8Level level) {
  if (s.Cg != 1 || s.groups <= 1) return false;
  const int32_t sw = s.sw, dw = s.dw;
  if (sw > 16 || dw > 16 || (int8_tile(level).group * dw) % sw != 0) return false;
#if defined(__aarch64__)
  (void)level;
  return 3 * sw + 3 * dw + 1 <= 16;  // four windows of four bytes from one 16-byte load
#else
  if (level == Int8Level::kWide16) return 3 * sw + dw <= 7 && sw <= 2;  // int16 elements, pairs
  return 3 * sw + 3 * dw + 1 <= 16 && sw <= 4;
#endif
}

// Bytes per element of a depthwise row: int16 for kWide16 on x86 (pairs of them per window), bytes elsewhere.
int32_t element_bytes(const Int8Tile& t) { return t.group == 2 ? 2 : 1; }

int32_t ceil_div(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }

}  // namespace

Int8ConvPlan plan_int8_conv(const Int8ConvShape& s, Int8Level level) {
  Int8ConvPlan p;
  memset(&p, 0, sizeof(p));
  p.level = level;
  p.tile = int8_tile(level);
  if (level == Int8Level::kScalar || tier_kernels(level) == nullptr) {
    p.path = Int8ConvPath::kScalar;
    return p;
  }
  const Int8Tile& t = p.tile;
  p.taps = s.Cg * s.KH * s.KW;
  p.k_groups = ceil_div(p.taps, t.group);
  p.blocks = ceil_div(s.OC / s.groups, t.rows);
  if (depthwise_fits(s, level)) {
    p.path = Int8ConvPath::kDepthwise;
    p.kw_groups = ceil_div(s.KW, t.group);
    p.group_step = t.group * s.dw / s.sw;
    p.window_rows = (s.OH - 1) * s.sh + (s.KH - 1) * s.dh + 1;
    const int32_t lanes = t.lanes;
    p.window_pitch = (ceil_div(s.OW, lanes) + ceil_div(int64_t{p.kw_groups - 1} * p.group_step, lanes)) * lanes;
    // A vector of windows loads a whole vector from its first window's first element: the last row's reach past
    // the plane.
    p.plane_cols = s.W + 2 * s.pw;
    const size_t slack = static_cast<size_t>(p.window_pitch) * s.sw + 4 * lanes;
    p.plane_bytes = ((static_cast<size_t>(p.window_rows) * p.plane_cols + slack) * element_bytes(t) + 15) & ~size_t{15};
    p.scratch = p.plane_bytes + static_cast<size_t>(p.window_rows) * p.window_pitch * 4;
    p.weight_bytes = static_cast<size_t>(s.OC) * s.KH * p.kw_groups * 4;
    return p;
  }
  p.path = Int8ConvPath::kGemm;
  const bool pointwise = s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0;
  p.source = pointwise ? GemmSource::kInPlace : s.sh == s.sw ? GemmSource::kFlat : GemmSource::kGathered;
  p.pixels = s.OH * s.OW;
  if (p.source == GemmSource::kFlat) {
    p.plane_rows = ceil_div(s.H + 2 * s.ph, s.sh);
    p.plane_cols = ceil_div(s.W + 2 * s.pw, s.sw);
    p.pixels = (s.OH - 1) * p.plane_cols + s.OW;
    // A panel's taps are read 16 pixels at a time: the last run may reach past the last plane.
    const size_t phases = static_cast<size_t>(s.sh) * s.sw;
    p.plane_bytes = (static_cast<size_t>(s.Cg) * phases * p.plane_rows * p.plane_cols + 16 + 15) & ~size_t{15};
  }
  const int32_t total = ceil_div(p.pixels, t.lanes);
  int32_t vectors = static_cast<int32_t>(kPanelBudget / (static_cast<size_t>(p.k_groups) * t.lanes * 4));
  vectors -= vectors % t.max_vectors;
  if (vectors < t.max_vectors) vectors = t.max_vectors;
  p.panel_vectors = vectors < total ? vectors : total;
  const size_t panel_pixels = static_cast<size_t>(p.panel_vectors) * t.lanes;
  p.panel_bytes = panel_pixels * 4 * p.k_groups;
  p.rows_bytes = (panel_pixels * t.group + 15) & ~size_t{15};
  p.staging_bytes =
      p.source == GemmSource::kFlat ? (static_cast<size_t>(s.OC / s.groups) * panel_pixels + 15) & ~size_t{15} : 0;
  p.scratch = p.panel_bytes + p.rows_bytes + p.plane_bytes + p.staging_bytes;
  p.weight_bytes = static_cast<size_t>(s.groups) * p.blocks * p.k_groups * t.rows * 4;
  return p;
}

bool int8_conv_shape_from_args(const KernelArgs& args, Int8ConvShape* s) {
  const ArrayRef<int32_t> in = args.sizes(0), w = args.sizes(3);
  if (in.size() != 4 || w.size() != 4) return false;
  const size_t ns = args.list_size(6), np = args.list_size(7), nd = args.list_size(8);
  if (ns < 1 || ns > 2 || np < 1 || np > 2 || nd < 1 || nd > 2) return false;
  const int64_t sh = args.list_item(6, 0), sw = args.list_item(6, ns - 1), ph = args.list_item(7, 0),
                pw = args.list_item(7, np - 1), dh = args.list_item(8, 0), dw = args.list_item(8, nd - 1),
                groups = args.to_int(9);
  auto within = [](int64_t v, int64_t lo) { return v >= lo && v <= INT32_MAX; };
  if (!within(sh, 1) || !within(sw, 1) || !within(dh, 1) || !within(dw, 1) || !within(ph, 0) || !within(pw, 0) ||
      !within(groups, 1) || in[1] <= 0 || in[2] <= 0 || in[3] <= 0 || w[0] <= 0 || w[1] <= 0 || w[2] <= 0 ||
      w[3] <= 0 || in[1] % groups != 0 || w[0] % groups != 0 || w[1] != in[1] / groups ||
      int64_t{w[1]} * w[2] * w[3] > quantized::kMaxAccumulatedProducts) {
    return false;
  }
  const int64_t OH = (in[2] + 2 * ph - dh * (w[2] - 1) - 1) / sh + 1;
  const int64_t OW = (in[3] + 2 * pw - dw * (w[3] - 1) - 1) / sw + 1;
  // Planes a bordered copy or a panel row could not index in int32 are left to the scalar kernel.
  if (!int8_conv_plannable(in[2], in[3], ph, pw, OH, OW)) return false;
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  *s = Int8ConvShape{};
  s->C = in[1], s->H = in[2], s->W = in[3];
  s->OC = w[0], s->Cg = w[1], s->KH = w[2], s->KW = w[3];
  s->OH = i32(OH), s->OW = i32(OW);
  s->sh = i32(sh), s->sw = i32(sw), s->ph = i32(ph), s->pw = i32(pw), s->dh = i32(dh), s->dw = i32(dw);
  s->groups = i32(groups);
  return true;
}

namespace {

size_t state_bytes(int32_t channels, const Int8ConvPlan& plan) {
  return sizeof(Int8ConvHeader) + static_cast<size_t>(channels) * sizeof(RowFinish) +
         ((plan.weight_bytes + 15) & ~size_t{15});
}

// The weights in the tier's element form: bytes, or int16 for kWide16 on x86 (two per 4-byte group).
void put_weight(uint8_t* dst, int32_t t, int32_t group, int8_t v) {
  if (group == 2) {
    const int16_t w = v;
    memcpy(dst + 2 * t, &w, 2);
  } else {
    dst[t] = static_cast<uint8_t>(v);
  }
}

// GEMM: per conv group, blocks of tile.rows channels, each [k_groups][rows][4 bytes]; zero past the group's
// channels and past the reduction, so those products add nothing.
void pack_gemm_weights(const Int8ConvShape& s, const Int8ConvPlan& p, const int8_t* w, uint8_t* out) {
  const int32_t R = p.tile.rows, G = p.tile.group, ocg = s.OC / s.groups, taps = p.taps;
  const int32_t whole = taps / G;  // groups with every tap inside the reduction
  memset(out, 0, p.weight_bytes);
  for (int32_t grp = 0; grp < s.groups; ++grp) {
    for (int32_t b = 0; b < p.blocks; ++b) {
      uint8_t* block = out + (static_cast<size_t>(grp) * p.blocks + b) * p.k_groups * R * 4;
      for (int32_t m = 0; m < R && b * R + m < ocg; ++m) {
        const int8_t* row = w + static_cast<size_t>(grp * ocg + b * R + m) * taps;
        uint8_t* slot = block + static_cast<size_t>(m) * 4;
        const size_t step = static_cast<size_t>(R) * 4;
        // A group of taps per 4-byte slot: G bytes, or G int16 (separate loops, so each is a plain copy).
        if (G == 4) {
          for (int32_t q = 0; q < whole; ++q) memcpy(slot + q * step, row + 4 * q, 4);
        } else {
          for (int32_t q = 0; q < whole; ++q) {
            const int16_t pair[2] = {row[2 * q], row[2 * q + 1]};
            memcpy(slot + q * step, pair, 4);
          }
        }
        for (int32_t t = 0; t < taps - whole * G; ++t) put_weight(slot + whole * step, t, G, row[whole * G + t]);
      }
    }
  }
}

// Depthwise: per output channel [KH][kw_groups][4 bytes], zero past the kernel's width.
void pack_depthwise_weights(const Int8ConvShape& s, const Int8ConvPlan& p, const int8_t* w, uint8_t* out) {
  const int32_t G = p.tile.group;
  memset(out, 0, p.weight_bytes);
  for (int32_t oc = 0; oc < s.OC; ++oc) {
    for (int32_t kh = 0; kh < s.KH; ++kh) {
      for (int32_t kw = 0; kw < s.KW; ++kw) {
        uint8_t* dst = out + ((static_cast<size_t>(oc) * s.KH + kh) * p.kw_groups + kw / G) * 4;
        put_weight(dst, kw % G, G, w[(static_cast<size_t>(oc) * s.KH + kh) * s.KW + kw]);
      }
    }
  }
}

}  // namespace

void derive_row_finish(const quantized::RequantHeader& q, const quantized::ChannelParams* params, const int8_t* weights,
                       int64_t taps, int32_t offset, int64_t count, RowFinish* out) {
  // The largest activation magnitude a tier multiplies: an offset byte (0..255) or a signed one (-128..127).
  const int64_t largest = offset != 0 ? 255 : 128;
  for (int64_t oc = 0; oc < count; ++oc) {
    const quantized::ChannelParams& c = params[oc];
    const quantized::RequantSteps steps =
        quantized::requant_steps(quantized::QuantizedMultiplier{c.multiplier, c.shift}, c.headroom);
    const int64_t correction = int64_t{c.bias} - (int64_t{q.input_zero_point} + offset) * c.weight_sum;
    const int64_t magnitude = quantized::weight_magnitude(weights + oc * taps, taps);
    // The lanes add the correction in int32 and shift left without saturating: both must be exact. The scalar
    // kernel's sum is bounded by its headroom, and a left shift within it cannot saturate.
    const int64_t c_abs = correction < 0 ? -correction : correction;
    // (A left shift of 31 only happens for a channel whose bound is 0; x86_512.cc's fold of the steps wants at most
    // 30, so such a channel is finished in scalar code.)
    const bool exact = c_abs + largest * magnitude <= INT32_MAX && steps.left <= c.headroom && steps.left <= 30;
    out[oc] = RowFinish{exact ? static_cast<int32_t>(correction) : 0, steps.multiplier,
                        static_cast<int16_t>(steps.left), static_cast<int16_t>(steps.right), exact ? 1 : 0};
  }
}

KernelMemory int8_conv_memory(const KernelArgs& args, const quantized::RequantArgs& at) {
  KernelMemory m = quantized::requant_memory(args, at);
  // The header is always there: prepare records in it that a call it cannot plan goes to the scalar kernel.
  m.state += sizeof(Int8ConvHeader);
  Int8ConvShape s;
  if (!int8_conv_shape_from_args(args, &s)) return m;  // refused at prepare or execute, naming why
  const Int8ConvPlan plan = plan_int8_conv(s, int8_level());
  if (plan.path == Int8ConvPath::kScalar) return m;
  m.state += state_bytes(s.OC, plan) - sizeof(Int8ConvHeader);
  m.scratch = (plan.scratch + 15) & ~size_t{15};
  return m;
}

Error int8_conv_prepare(const KernelArgs& args, const quantized::RequantArgs& at, void* state) {
  const Error prepared = quantized::requant_prepare(args, at, state);
  if (prepared != Error::Ok) return prepared;
  const quantized::RequantHeader* q = static_cast<const quantized::RequantHeader*>(state);
  Int8ConvHeader* h = const_cast<Int8ConvHeader*>(int8_conv_header(q));
  memset(h, 0, sizeof(*h));
  Int8ConvShape s;
  // A shape the checks refuse: execute hands the call to the scalar kernel, which names the fault.
  if (!int8_conv_shape_from_args(args, &s) || s.OC != q->channels) return Error::Ok;
  const Int8ConvPlan plan = plan_int8_conv(s, int8_level());
  if (plan.path == Int8ConvPath::kScalar) return Error::Ok;
  const int8_t* w = args.tensor(at.weight)->const_data_ptr<int8_t>();
  RowFinish* finish = const_cast<RowFinish*>(row_finish(q));
  derive_row_finish(*q, quantized::channel_params(q), w, q->taps, plan.tile.offset, s.OC, finish);
  uint8_t* packed = reinterpret_cast<uint8_t*>(finish + s.OC);
  if (plan.path == Int8ConvPath::kDepthwise) {
    pack_depthwise_weights(s, plan, w, packed);
  } else {
    pack_gemm_weights(s, plan, w, packed);
  }
  h->level = static_cast<int32_t>(plan.level);
  h->path = static_cast<int32_t>(plan.path);
  h->weights_offset = static_cast<int32_t>(packed - static_cast<uint8_t*>(state));
  h->groups = s.groups, h->Cg = s.Cg, h->KH = s.KH, h->KW = s.KW;
  // Strides and dilations past 16 never reach the depthwise path; 65535 keeps the pair in one int32.
  h->sw_dw = (s.sw < 65536 ? s.sw : 65535) * 65536 + (s.dw < 65536 ? s.dw : 65535);
  return Error::Ok;
}

}  // namespace optimized
}  // namespace ember
