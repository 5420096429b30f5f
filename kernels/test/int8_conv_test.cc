// kernels/optimized's int8 convolution and linear (op_quantized_conv2d.cc, op_quantized_linear.cc) against
// kernels/quantized's scalar kernels, byte for byte, on every tier this CPU runs (int8/level.h: limit_int8_level
// picks): AVX512-VNNI, AVX-VNNI and AVX2 on x86-64; SDOT and plain NEON on aarch64 (built with --config=linux_aarch64
// and run under qemu-aarch64, which has both). Shapes cover both paths (GEMM over gathered panels, depthwise over
// bordered planes) at their edges: odd channel counts, a reduction not a multiple of the dot product's group,
// plane widths around a vector, several panels per call, strides, padding, dilation, groups, channel multipliers,
// per-tensor and per-channel weight scales, zero points at both ends of int8, clamped activation ranges, and
// channels whose sum could overflow int32 (finished in 64 bits) or whose multiplier exceeds 1.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/optimized/int8/conv.h"
#include "kernels/optimized/int8/finish.h"
#include "kernels/optimized/int8/level.h"
#include "kernels/optimized/int8/tier_kernels.h"
#include "kernels/optimized/kernels.h"
#include "kernels/quantized/kernels.h"
#include "kernels/test/owned_tensor.h"
#include "runtime/kernel/kernel_args.h"

namespace ember {
namespace {

using optimized::Int8Level;
using testing::Owned;

uint32_t g_seed = 20261128;
uint32_t next_u32() {
  g_seed = g_seed * 1664525u + 1013904223u;
  return g_seed >> 8;
}
int32_t uniform_int(int32_t lo, int32_t hi) {
  return static_cast<int32_t>(lo + static_cast<int64_t>(next_u32() % (int64_t{hi} - lo + 1)));
}
float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next_u32()) / 16777216.0f; }

std::vector<int8_t> random_bytes(size_t n, int32_t lo = -128, int32_t hi = 127) {
  std::vector<int8_t> v(n);
  for (int8_t& b : v) b = static_cast<int8_t>(uniform_int(lo, hi));
  return v;
}

// The tiers to run here: every one this CPU has, from the widest down.
std::vector<Int8Level> tiers() {
  std::vector<Int8Level> out;
  for (Int8Level l : {Int8Level::kDot512, Int8Level::kDot, Int8Level::kWide16}) {
    optimized::limit_int8_level(l);
    if (optimized::int8_level() == l) out.push_back(l);
  }
  optimized::limit_int8_level(Int8Level::kDot512);
  return out;
}

struct Aligned {
  std::vector<uint64_t> storage;
  uint8_t* data = nullptr;
  size_t size = 0;
  explicit Aligned(size_t n) : storage(n / 8 + 4), size(n) {
    data = reinterpret_cast<uint8_t*>(storage.data());
    data += (16 - reinterpret_cast<uintptr_t>(data) % 16) % 16;
  }
};

struct Conv {
  int32_t N, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw, groups;
  // Quantization: per-channel scales (or one), zero points, activation range, and what the bias looks like.
  bool per_channel = true;
  int32_t zp_in = 3, zp_out = -5, lo = -128, hi = 127;
  double input_scale = 0.02, output_scale = 0.05;
  int32_t bias_range = 2000;  // |bias| up to this; 0: no bias
  float weight_scale_lo = 0.001f, weight_scale_hi = 0.01f;
  // Weights in [-weight_bound, weight_bound]; inputs within input_spread of the zero point (-1: anywhere).
  int32_t weight_bound = 128, input_spread = -1;
};

std::string describe(const Conv& c) {
  char buf[256];
  snprintf(buf, sizeof(buf),
           "N%d C%d %dx%d -> OC%d k%dx%d s%d,%d p%d,%d d%d,%d g%d zp %d/%d range [%d, %d] out scale %g bias %d", c.N,
           c.C, c.H, c.W, c.OC, c.KH, c.KW, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.groups, c.zp_in, c.zp_out, c.lo, c.hi,
           c.output_scale, c.bias_range);
  return buf;
}

// One conv2d instruction's arguments, its two prepared states (scalar and tier) and outputs.
struct ConvCall {
  Conv c;
  int32_t OH, OW;
  Owned<int8_t> x, w, got, want;
  Owned<float> scales;
  Owned<int32_t> bias;
  int64_t lists[3][2];
  EValue items[6], values[15];
  EValue* item_ptrs[6];
  EValue* args[15];

  static int32_t out_size(int32_t in, int32_t k, int32_t s, int32_t p, int32_t d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
  }

  explicit ConvCall(const Conv& conv)
      : c(conv),
        OH(out_size(c.H, c.KH, c.sh, c.ph, c.dh)),
        OW(out_size(c.W, c.KW, c.sw, c.pw, c.dw)),
        x(ScalarType::Char, {c.N, c.C, c.H, c.W},
          c.input_spread < 0 ? random_bytes(static_cast<size_t>(c.N) * c.C * c.H * c.W)
                             : random_bytes(static_cast<size_t>(c.N) * c.C * c.H * c.W,
                                            c.zp_in - c.input_spread < -128 ? -128 : c.zp_in - c.input_spread,
                                            c.zp_in + c.input_spread > 127 ? 127 : c.zp_in + c.input_spread)),
        w(ScalarType::Char, {c.OC, c.C / c.groups, c.KH, c.KW},
          random_bytes(static_cast<size_t>(c.OC) * (c.C / c.groups) * c.KH * c.KW, -c.weight_bound,
                       c.weight_bound > 127 ? 127 : c.weight_bound)),
        got(ScalarType::Char, {c.N, c.OC, OH, OW}),
        want(ScalarType::Char, {c.N, c.OC, OH, OW}),
        scales(ScalarType::Float, {c.per_channel ? c.OC : 1}),
        bias(ScalarType::Int, {c.OC}) {
    for (float& s : scales.data) s = uniform(c.weight_scale_lo, c.weight_scale_hi);
    for (int32_t& b : bias.data) {
      b = c.bias_range ? uniform_int(-c.bias_range, c.bias_range) : 0;
      // Ranges past 2^30 are for sums at int32's ends: the bias right at them.
      if (c.bias_range > (1 << 30)) b = (b < 0 ? -1 : 1) * (c.bias_range - uniform_int(0, 5000));
    }
    const int64_t l[3][2] = {{c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw}};
    memcpy(lists, l, sizeof(lists));
    for (int i = 0; i < 3; ++i) {
      items[2 * i] = EValue(lists[i][0]);
      items[2 * i + 1] = EValue(lists[i][1]);
    }
    for (int i = 0; i < 6; ++i) item_ptrs[i] = &items[i];
    static int64_t unboxed[3][2];
    const EValue v[15] = {EValue(x.t),
                          EValue(c.input_scale),
                          EValue(int64_t{c.zp_in}),
                          EValue(w.t),
                          EValue(scales.t),
                          c.bias_range ? EValue(bias.t) : EValue(),
                          EValue(BoxedIntList{item_ptrs, unboxed[0], 2}),
                          EValue(BoxedIntList{item_ptrs + 2, unboxed[1], 2}),
                          EValue(BoxedIntList{item_ptrs + 4, unboxed[2], 2}),
                          EValue(int64_t{c.groups}),
                          EValue(c.output_scale),
                          EValue(int64_t{c.zp_out}),
                          EValue(int64_t{c.lo}),
                          EValue(int64_t{c.hi}),
                          EValue(got.t)};
    for (int i = 0; i < 15; ++i) values[i] = v[i], args[i] = &values[i];
  }

  const int64_t* list(int i) const { return lists[i]; }

  // Runs one library's prepare step and kernel; returns the error, the output in `out`.
  template <typename Memory, typename Prepare, typename Kernel>
  Error run(Memory memory, Prepare prepare, Kernel kernel, Owned<int8_t>& out, bool with_scratch,
            optimized::Int8ConvPath* path = nullptr) {
    values[14] = EValue(out.t);
    const LoadedKernelArgs loaded(args, 15, uint64_t{0x38}, true);
    const KernelMemory m = memory(loaded);
    Aligned state(m.state), scratch(with_scratch ? m.scratch : 0);
    testing::clear_log();
    const Error prepared = prepare(loaded, state.data);
    if (prepared != Error::Ok) return prepared;
    if (path != nullptr) {
      const auto* q = reinterpret_cast<const quantized::RequantHeader*>(state.data);
      *path = static_cast<optimized::Int8ConvPath>(optimized::int8_conv_header(q)->path);
    }
    KernelContext ctx(state.data, Span<uint8_t>(scratch.data, scratch.size));
    const ArrayRef<int64_t> st(lists[0], 2), pd(lists[1], 2), dl(lists[2], 2);
    kernel(ctx, x.t, c.input_scale, c.zp_in, w.t, scales.t, c.bias_range ? &bias.t : nullptr, st, pd, dl, c.groups,
           c.output_scale, c.zp_out, c.lo, c.hi, out.t);
    return ctx.failure();
  }
};

// The path a shape must take on a vector tier: depthwise where every tier's shuffles reach (strides up to 2 at unit
// dilation), the GEMM for every shape that is not depthwise; either for the others (tier by tier).
bool path_as_expected(const Conv& c, Int8Level level, optimized::Int8ConvPath path) {
  using optimized::Int8ConvPath;
  if (level == Int8Level::kScalar) return path == Int8ConvPath::kScalar;
  const bool depthwise = c.C / c.groups == 1 && c.groups > 1;
  if (!depthwise) return path == Int8ConvPath::kGemm;
  if (c.sw <= 2 && c.dw == 1) return path == Int8ConvPath::kDepthwise;
  return path == Int8ConvPath::kDepthwise || path == Int8ConvPath::kGemm;
}

void check_conv(const Conv& c) {
  ConvCall call(c);
  ASSERT_EQ(call.run(quantized::conv2d_memory, quantized::conv2d_prepare, quantized::conv2d_out, call.want, true),
            Error::Ok)
      << describe(c) << ": " << testing::last_log();
  for (Int8Level level : tiers()) {
    optimized::limit_int8_level(level);
    for (bool with_scratch : {true, false}) {
      const std::string where = describe(c) + " on " + optimized::int8_level_name(level) +
                                (with_scratch ? "" : ", without scratch (the scalar kernel's turn)");
      memset(call.got.data.data(), 0x5A, call.got.data.size());
      optimized::Int8ConvPath path = optimized::Int8ConvPath::kScalar;
      const Error e = call.run(optimized::quantized_conv2d_memory, optimized::quantized_conv2d_prepare,
                               optimized::quantized_conv2d_out, call.got, with_scratch, &path);
      ASSERT_EQ(e, Error::Ok) << where << ": " << testing::last_log();
      EXPECT_TRUE(path_as_expected(c, level, path)) << where << ": prepared path " << static_cast<int>(path);
      for (size_t i = 0; i < call.want.data.size(); ++i) {
        ASSERT_EQ(call.got.data[i], call.want.data[i]) << where << ", output element " << i;
      }
    }
  }
  optimized::limit_int8_level(Int8Level::kDot512);
}

Conv conv(int32_t C, int32_t H, int32_t W, int32_t OC, int32_t K, int32_t stride, int32_t pad, int32_t groups = 1) {
  return Conv{1, C, H, W, OC, K, K, stride, stride, pad, pad, 1, 1, groups};
}

TEST(Int8Conv, PointwiseMatchesTheScalarKernel) {
  check_conv(conv(16, 7, 9, 24, 1, 1, 0));   // 63 pixels: a partial last vector on every tier
  check_conv(conv(13, 5, 5, 11, 1, 1, 0));   // odd channels: a partial block and a reduction group
  check_conv(conv(32, 16, 16, 8, 1, 1, 0));  // whole vectors
  check_conv(conv(9, 9, 11, 5, 1, 2, 0));    // strided 1x1: gathered, not read in place
}

TEST(Int8Conv, GemmPathMatchesTheScalarKernel) {
  check_conv(conv(3, 12, 12, 8, 3, 1, 1));  // a network's first layer: 27 taps
  check_conv(conv(5, 15, 13, 7, 3, 2, 1));
  Conv dilated = conv(4, 11, 10, 9, 3, 1, 2);
  dilated.dh = dilated.dw = 2;
  check_conv(dilated);
  Conv rect = conv(6, 9, 14, 5, 1, 1, 0);
  rect.KH = 5, rect.KW = 3, rect.sh = 2, rect.sw = 1, rect.ph = 2, rect.pw = 1;
  check_conv(rect);
  check_conv(conv(6, 8, 8, 9, 3, 1, 1, 3));  // grouped: three groups of two channels
  Conv batch = conv(8, 6, 6, 16, 3, 1, 1);
  batch.N = 2;
  check_conv(batch);
  check_conv(conv(64, 20, 20, 40, 3, 1, 1));  // 576 taps, 400 pixels: several panels
  check_conv(conv(7, 3, 3, 6, 5, 1, 2));      // a plane smaller than the kernel's padding
  check_conv(conv(4, 40, 41, 8, 3, 2, 1));    // stride 2 over rows wide enough for the vector deinterleave
  check_conv(conv(3, 30, 37, 8, 7, 2, 3));    // a 7x7 stem at stride 2: four phase planes, odd sizes
  check_conv(conv(8, 17, 19, 12, 1, 2, 0));   // a 1x1 downsample at stride 2: one phase plane read
}

TEST(Int8Conv, DepthwisePathMatchesTheScalarKernel) {
  check_conv(conv(17, 9, 20, 17, 3, 1, 1, 17));  // rows past one 16-pixel vector
  check_conv(conv(8, 14, 33, 8, 3, 2, 1, 8));
  check_conv(conv(5, 7, 7, 10, 3, 1, 1, 5));     // channel multiplier 2
  check_conv(conv(4, 10, 10, 4, 5, 1, 2, 4));    // 5x5: two and three tap groups per row
  Conv dilated = conv(3, 12, 12, 3, 3, 1, 2, 3);
  dilated.dh = dilated.dw = 2;
  check_conv(dilated);
  check_conv(conv(6, 13, 16, 6, 3, 3, 1, 6));  // stride 3: depthwise where the shuffles reach, GEMM elsewhere
  check_conv(conv(3, 1, 1, 3, 3, 1, 1, 3));    // a 1x1 plane: every tap but the centre in the padding
  Conv no_pad = conv(4, 6, 21, 4, 3, 1, 0, 4);
  no_pad.KH = 1;
  check_conv(no_pad);
}

TEST(Int8Conv, QuantizationEdgesMatchTheScalarKernel) {
  Conv per_tensor = conv(12, 6, 6, 10, 3, 1, 1);
  per_tensor.per_channel = false;
  check_conv(per_tensor);
  for (int32_t zp : {-128, 127}) {
    Conv c = conv(10, 7, 7, 12, 3, 1, 1);
    c.zp_in = zp, c.zp_out = -zp - 1;
    check_conv(c);
    Conv d = conv(10, 7, 7, 10, 3, 1, 1, 10);
    d.zp_in = zp, d.zp_out = zp;
    check_conv(d);
  }
  // A ReLU6-like clamp and a no-bias call.
  Conv clamped = conv(8, 9, 9, 16, 1, 1, 0);
  clamped.zp_out = -128, clamped.lo = -128, clamped.hi = 40, clamped.bias_range = 0;
  check_conv(clamped);
  // Multipliers above 1 (a left shift before the high multiply): small sums, so the outputs spread over the range.
  for (double out_scale : {2e-5, 1e-6}) {
    for (int32_t groups : {1, 9}) {
      Conv c = conv(9, 6, 7, 9, 3, 1, 1, groups);
      c.output_scale = out_scale, c.weight_bound = 2, c.input_spread = 3, c.bias_range = 40;
      check_conv(c);
    }
  }
  // A multiplier of exactly 2^-8: one output in 256 is an exact tie, which the final shift rounds away from zero.
  for (int32_t groups : {1, 16}) {
    Conv c = conv(16, 12, 12, 16, 3, 1, 1, groups);
    c.input_scale = 0.5, c.output_scale = 0.125, c.weight_scale_lo = c.weight_scale_hi = 1.0f / 1024;
    c.input_spread = 40;
    check_conv(c);
  }
  // A large output scale: most outputs round to the zero point.
  Conv coarse = conv(9, 6, 7, 9, 3, 1, 1);
  coarse.output_scale = 3.0;
  check_conv(coarse);
  // Biases near int32's ends, with a multiplier small enough to bring them back into int8: sums that overflow int32
  // saturate, as the scalar kernel's, and these channels are finished in 64 bits.
  for (int32_t groups : {1, 8}) {
    Conv huge = conv(8, 5, 19, 8, 3, 1, 1, groups);
    huge.bias_range = 2147400000, huge.output_scale = 2e4;
    check_conv(huge);
  }
  // A multiplier above 1 with a bias whose bound leaves no headroom for its left shift (it may saturate).
  for (int32_t groups : {1, 8}) {
    Conv c = conv(8, 5, 9, 8, 3, 1, 1, groups);
    c.bias_range = 300000000, c.output_scale = 1e-6, c.weight_bound = 2, c.input_spread = 3;
    check_conv(c);
  }
}

// A direct caller may execute with other arguments than it prepared with (here: two groups over twice the channels,
// which the shared checks accept for the same weight): the tier's packing does not fit them, so the call is the
// scalar kernel's, with its bytes, never a read of weights in another layout.
TEST(Int8Conv, ACallUnlikeThePreparedOneTakesTheScalarKernel) {
  ConvCall prepared(conv(4, 6, 6, 8, 3, 1, 1));
  const LoadedKernelArgs loaded(prepared.args, 15, uint64_t{0x38}, true);
  const KernelMemory m = optimized::quantized_conv2d_memory(loaded);
  Aligned state(m.state), scratch(m.scratch);
  ASSERT_EQ(optimized::quantized_conv2d_prepare(loaded, state.data), Error::Ok) << testing::last_log();
  Owned<int8_t> x(ScalarType::Char, {1, 8, 6, 6}, random_bytes(8 * 6 * 6));
  Owned<int8_t> got(ScalarType::Char, {1, 8, 6, 6}), want(ScalarType::Char, {1, 8, 6, 6});
  const int64_t one[2] = {1, 1};
  const ArrayRef<int64_t> ones(one, 2);
  const Conv& c = prepared.c;
  for (Owned<int8_t>* out : {&got, &want}) {
    KernelContext ctx(state.data, Span<uint8_t>(scratch.data, scratch.size));
    if (out == &got) {
      optimized::quantized_conv2d_out(ctx, x.t, c.input_scale, c.zp_in, prepared.w.t, prepared.scales.t,
                                      &prepared.bias.t, ones, ones, ones, 2, c.output_scale, c.zp_out, c.lo, c.hi,
                                      out->t);
    } else {
      quantized::conv2d_out(ctx, x.t, c.input_scale, c.zp_in, prepared.w.t, prepared.scales.t, &prepared.bias.t, ones,
                            ones, ones, 2, c.output_scale, c.zp_out, c.lo, c.hi, out->t);
    }
    ASSERT_EQ(ctx.failure(), Error::Ok) << testing::last_log();
  }
  EXPECT_EQ(got.data, want.data);
}

// Linear: decode rows and a few rows at once, reductions around each tier's step and tail.
TEST(Int8Linear, MatchesTheScalarKernel) {
  struct Shape {
    int32_t rows, IC, OC;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{1, 7, 5}, Shape{1, 64, 10}, Shape{3, 100, 9}, Shape{1, 1280, 20},
                        Shape{2, 33, 4}, Shape{1, 129, 7}}) {
    for (int32_t zp : {-128, 0, 127}) {
      Owned<int8_t> x(ScalarType::Char, {s.rows, s.IC}, random_bytes(static_cast<size_t>(s.rows) * s.IC));
      Owned<int8_t> w(ScalarType::Char, {s.OC, s.IC}, random_bytes(static_cast<size_t>(s.OC) * s.IC));
      Owned<int8_t> got(ScalarType::Char, {s.rows, s.OC}), want(ScalarType::Char, {s.rows, s.OC});
      Owned<float> scales(ScalarType::Float, {s.OC});
      for (float& v : scales.data) v = uniform(0.001f, 0.01f);
      Owned<int32_t> bias(ScalarType::Int, {s.OC});
      for (int32_t& b : bias.data) b = uniform_int(-5000, 5000);
      auto call = [&](Owned<int8_t>& out, bool optimized_kernel, bool with_scratch) {
        EValue values[11] = {EValue(x.t),           EValue(0.03),         EValue(int64_t{zp}), EValue(w.t),
                             EValue(scales.t),      EValue(bias.t),       EValue(0.04),        EValue(int64_t{2}),
                             EValue(int64_t{-128}), EValue(int64_t{127}), EValue(out.t)};
        EValue* args[11];
        for (int i = 0; i < 11; ++i) args[i] = &values[i];
        const LoadedKernelArgs loaded(args, 11, uint64_t{0x38}, true);
        const KernelMemory m =
            optimized_kernel ? optimized::quantized_linear_memory(loaded) : quantized::linear_memory(loaded);
        Aligned state(m.state), scratch(with_scratch ? m.scratch : 0);
        const Error prepared = optimized_kernel ? optimized::quantized_linear_prepare(loaded, state.data)
                                                : quantized::linear_prepare(loaded, state.data);
        if (prepared != Error::Ok) return prepared;
        KernelContext ctx(state.data, Span<uint8_t>(scratch.data, scratch.size));
        if (optimized_kernel) {
          optimized::quantized_linear_out(ctx, x.t, 0.03, zp, w.t, scales.t, &bias.t, 0.04, 2, -128, 127, out.t);
        } else {
          quantized::linear_out(ctx, x.t, 0.03, zp, w.t, scales.t, &bias.t, 0.04, 2, -128, 127, out.t);
        }
        return ctx.failure();
      };
      ASSERT_EQ(call(want, false, true), Error::Ok) << testing::last_log();
      for (Int8Level level : tiers()) {
        optimized::limit_int8_level(level);
        for (bool with_scratch : {true, false}) {
          ASSERT_EQ(call(got, true, with_scratch), Error::Ok) << testing::last_log();
          EXPECT_EQ(got.data, want.data) << "rows " << s.rows << " IC " << s.IC << " OC " << s.OC << " zp " << zp
                                         << " on " << optimized::int8_level_name(level)
                                         << (with_scratch ? "" : " without scratch");
        }
      }
      optimized::limit_int8_level(Int8Level::kDot512);
    }
  }
}

// Add: lengths around each tier's vector, scales either way round, an output multiplier above 1 (its left shift
// saturates), zero points at both ends, a clamped range.
TEST(Int8Add, MatchesTheScalarKernel) {
  struct Scales {
    double self, other, out;
  };
  for (int32_t n : {1, 7, 8, 15, 16, 17, 100, 1000}) {
    for (const Scales sc : {Scales{0.02, 0.03, 0.05}, Scales{0.1, 0.01, 0.04}, Scales{0.5, 0.5, 0.125},
                            Scales{0.03, 0.02, 1e-8}, Scales{1.0, 1e-4, 3.0}}) {
      for (int32_t zp : {-128, 5, 127}) {
        Owned<int8_t> a(ScalarType::Char, {n}, random_bytes(static_cast<size_t>(n)));
        Owned<int8_t> b(ScalarType::Char, {n}, random_bytes(static_cast<size_t>(n)));
        Owned<int8_t> got(ScalarType::Char, {n}), want(ScalarType::Char, {n});
        const int32_t lo = zp == 5 ? -20 : -128, hi = zp == 5 ? 90 : 127;
        ASSERT_EQ(testing::run([&](KernelContext& c) {
                    quantized::add_out(c, a.t, sc.self, zp, b.t, sc.other, -zp / 2, sc.out, -1 - zp, lo, hi, want.t);
                  }),
                  Error::Ok)
            << testing::last_log();
        for (Int8Level level : tiers()) {
          optimized::limit_int8_level(level);
          memset(got.data.data(), 0x5A, got.data.size());
          ASSERT_EQ(testing::run([&](KernelContext& c) {
                      optimized::quantized_add_out(c, a.t, sc.self, zp, b.t, sc.other, -zp / 2, sc.out, -1 - zp, lo, hi,
                                                   got.t);
                    }),
                    Error::Ok)
              << testing::last_log();
          EXPECT_EQ(got.data, want.data) << "n " << n << " scales " << sc.self << ", " << sc.other << " -> " << sc.out
                                         << " zp " << zp << " on " << optimized::int8_level_name(level);
        }
        optimized::limit_int8_level(Int8Level::kDot512);
      }
    }
  }
}

// quantize_per_tensor to int8: values around each tier's vector length, exact ties (x.5 steps), values far past
// the range, infinities and NaN, at scales either side of 1 and zero points at both ends.
TEST(Int8Quantize, MatchesTheScalarKernel) {
  for (int32_t n : {1, 7, 8, 15, 16, 17, 100}) {
    for (double scale : {0.02, 0.5, 3.0}) {
      for (int32_t zp : {-128, 3, 127}) {
        std::vector<float> v(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) {
          // Every fourth value an exact tie of x / scale, the rest spread past the int8 range.
          v[i] = i % 4 == 0 ? static_cast<float>((i / 4 + 0.5) * scale) : uniform(-300.0f, 300.0f) * float(scale);
        }
        if (n > 3) v[1] = NAN, v[2] = INFINITY, v[3] = -INFINITY;
        Owned<float> x(ScalarType::Float, {n}, v);
        Owned<int8_t> got(ScalarType::Char, {n}), want(ScalarType::Char, {n});
        const int64_t dtype = static_cast<int64_t>(ScalarType::Char);
        ASSERT_EQ(testing::run([&](KernelContext& c) {
                    quantized::quantize_per_tensor_out(c, x.t, scale, zp, -128, 127, dtype, want.t);
                  }),
                  Error::Ok)
            << testing::last_log();
        for (Int8Level level : tiers()) {
          optimized::limit_int8_level(level);
          memset(got.data.data(), 0x5A, got.data.size());
          ASSERT_EQ(testing::run([&](KernelContext& c) {
                      optimized::quantize_per_tensor_out(c, x.t, scale, zp, -128, 127, dtype, got.t);
                    }),
                    Error::Ok)
              << testing::last_log();
          EXPECT_EQ(got.data, want.data) << "n " << n << " scale " << scale << " zp " << zp << " on "
                                         << optimized::int8_level_name(level);
        }
        optimized::limit_int8_level(Int8Level::kDot512);
      }
    }
  }
}

// The lanes' requantization against finish.h's scalar steps over its whole domain: every left and right shift an
// exact channel can have, multipliers at both ends of Q31, powers of two (whose products tie), and sums at and
// around the values where either rounding ties or the high multiply's sign flips, up to the largest the left shift
// keeps within int32.
TEST(Int8Finish, LanesGiveTheScalarStepsBytes) {
  std::vector<int32_t> sums;
  std::vector<int8_t> got, want;
  for (Int8Level level : tiers()) {
    const optimized::TierKernels* k = optimized::tier_kernels(level);
    ASSERT_NE(k, nullptr);
    size_t checked = 0;
    for (int32_t left = 0; left <= 30; ++left) {
      for (int32_t right = 0; right <= 31; ++right) {
        for (int32_t mi = 0; mi < 4; ++mi) {
          const int32_t multiplier = mi == 0   ? 1 << 30
                                     : mi == 1 ? INT32_MAX
                                     : mi == 2 ? (1 << 30) + 1
                                               : (1 << 30) + uniform_int(0, (1 << 30) - 1);
          const int64_t largest = INT32_MAX >> left;
          sums.clear();
          for (int32_t e = 0; e <= 31 - left; ++e) {
            const int64_t base = int64_t{1} << e;
            for (int64_t d = -2; d <= 2; ++d) {
              for (int64_t v : {base + d, -base + d, base / 2 + d, -base / 2 + d}) {
                if (v >= -largest - 1 && v <= largest) sums.push_back(static_cast<int32_t>(v));
              }
            }
          }
          for (int i = 0; i < 64; ++i) {
            sums.push_back(
                static_cast<int32_t>(uniform_int(static_cast<int32_t>(-largest - 1), static_cast<int32_t>(largest))));
          }
          const optimized::RowFinish f{0, multiplier, static_cast<int16_t>(left), static_cast<int16_t>(right), 1};
          for (const optimized::OutputRange r :
               {optimized::OutputRange{0, -128, 127}, optimized::OutputRange{-100, -128, 40}}) {
            got.assign(sums.size(), 0x5A);
            want.resize(sums.size());
            for (size_t i = 0; i < sums.size(); ++i) want[i] = optimized::finish_exact(sums[i], f, r);
            k->finish(sums.data(), static_cast<int32_t>(sums.size()), f, r, got.data());
            for (size_t i = 0; i < sums.size(); ++i) {
              ASSERT_EQ(got[i], want[i]) << optimized::int8_level_name(level) << ": sum " << sums[i] << " multiplier "
                                         << multiplier << " left " << left << " right " << right;
            }
            checked += sums.size();
          }
        }
      }
    }
    EXPECT_GT(checked, size_t{100000});
  }
}

TEST(Int8Conv, EveryTierThisCpuHasRuns) {
  // Not a check of the kernels: a record, in the log, of which tiers the tests above covered here.
  const std::vector<Int8Level> t = tiers();
  std::string names;
  for (Int8Level l : t) names += std::string(" ") + optimized::int8_level_name(l);
  printf("int8 tiers on this CPU:%s\n", names.c_str());
  EXPECT_FALSE(t.empty()) << "this CPU runs no vector tier: only the scalar fallback was checked";
}

}  // namespace
}  // namespace ember
