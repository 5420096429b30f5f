// The binary family's kernels called directly, for what an exported program cannot carry: arguments export would
// refuse (shapes that do not broadcast, bad rounding modes, a non-Bool mask, a result out cannot hold), dim
// orders (channels-last operands, mixed with broadcasting), and integer extremes (MIN / -1, shifts by the width).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/kernels.h"
#include "kernels/test/owned_tensor.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

using testing::logged;
using testing::Owned;
using testing::run;

using F32 = Owned<float>;
using I64 = Owned<int64_t>;
using I8 = Owned<int8_t>;
using U8 = Owned<uint8_t>;
using B = Owned<uint8_t>;  // Bool storage: one byte per element, 0 or 1 (std::vector<bool> has no data())

const std::vector<uint8_t> kChannelsLast = {0, 2, 3, 1};

TEST(BinaryOps, ShapesThatDoNotBroadcastAreRefused) {
  F32 a(ScalarType::Float, {2, 3}), b(ScalarType::Float, {4}), out(ScalarType::Float, {2, 3});
  B bout(ScalarType::Bool, {2, 3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::eq_tensor_out(c, a.t, b.t, bout.t); }), Error::InvalidArgument);
  EXPECT_TRUE(logged("eq.Tensor_out: input 1 (rank 1) does not broadcast")) << testing::last_log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::atan2_out(c, a.t, b.t, out.t); }), Error::InvalidArgument);
  F32 lo(ScalarType::Float, {3}), hi(ScalarType::Float, {5});
  EXPECT_EQ(run([&](KernelContext& c) { portable::clamp_tensor_out(c, a.t, &lo.t, &hi.t, out.t); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("clamp.Tensor_out: input 2")) << testing::last_log();
  // out of another shape than the broadcast (static shapes cannot be resized)
  F32 wrong(ScalarType::Float, {3, 2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::maximum_out(c, a.t, lo.t, wrong.t); }), Error::InvalidArgument);
  EXPECT_TRUE(logged("maximum.out: out has rank 2")) << testing::last_log();
}

TEST(BinaryOps, ArgumentsPyTorchRefusesAreRefused) {
  F32 a(ScalarType::Float, {2}, {1.5f, -2.5f}), out(ScalarType::Float, {2});
  I64 i(ScalarType::Long, {2}, {3, 4}), iout(ScalarType::Long, {2});
  const char bad[] = "round";
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::div_out_mode(c, a.t, a.t, Optional<StringView>(StringView{bad, 5}), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("div.out_mode: rounding_mode must be None, 'trunc' or 'floor', not 'round'"))
      << testing::last_log();
  // a Float result into a Long out, a Bool mask, clamp with no bound, bitwise ops on floats, Bool arithmetic
  EXPECT_EQ(run([&](KernelContext& c) { portable::remainder_tensor_out(c, i.t, a.t, iout.t); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("result type Float can't be cast to the desired output type Long")) << testing::last_log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::masked_fill_scalar_out(c, a.t, i.t, Scalar(1.0), out.t); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("masked_fill.Scalar_out: mask is Long")) << testing::last_log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::clamp_tensor_out(c, a.t, nullptr, nullptr, out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::bitwise_and_scalar_out(c, a.t, Scalar(int64_t{1}), out.t); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("bitwise_and.Scalar_out: not implemented for Float")) << testing::last_log();
  B bo(ScalarType::Bool, {2}, {1, 0});
  B bout(ScalarType::Bool, {2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::floor_divide_out(c, bo.t, bo.t, bout.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::bitwise_left_shift_tensor_out(c, bo.t, bo.t, bout.t); }),
            Error::InvalidArgument);
}

TEST(BinaryOps, IntegerDivisionByZeroIsANamedError) {
  I64 a(ScalarType::Long, {3}, {7, -7, 1}), z(ScalarType::Long, {3}, {2, 0, 1}), out(ScalarType::Long, {3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::floor_divide_out(c, a.t, z.t, out.t); }), Error::InvalidArgument);
  EXPECT_TRUE(logged("floor_divide.out: ZeroDivisionError")) << testing::last_log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::fmod_scalar_out(c, a.t, Scalar(int64_t{0}), out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::remainder_scalar_out(c, a.t, Scalar(false), out.t); }),
            Error::InvalidArgument);
  const char trunc[] = "trunc";
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::div_scalar_mode_out(c, a.t, Scalar(int64_t{0}), Optional<StringView>(StringView{trunc, 5}),
                                            out.t);
            }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("div.Scalar_mode_out: ZeroDivisionError")) << testing::last_log();
}

TEST(BinaryOps, IntegerExtremesAreDefined) {
  // INT64_MIN / -1 and % -1 overflow in C++; PyTorch wraps the quotient and the remainder is 0.
  I64 a(ScalarType::Long, {4}, {INT64_MIN, INT64_MIN, -7, 7}), b(ScalarType::Long, {4}, {-1, 3, 2, -2});
  I64 out(ScalarType::Long, {4});
  ASSERT_EQ(run([&](KernelContext& c) { portable::floor_divide_out(c, a.t, b.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{INT64_MIN, -3074457345618258603LL, -4, -4}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::remainder_tensor_out(c, a.t, b.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{0, 1, 1, -1}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::fmod_tensor_out(c, a.t, b.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{0, -2, -1, 1}));
  // Shifts by the width, beyond it and by negative amounts: 0 to the left, sign fill to the right.
  I64 x(ScalarType::Long, {4}, {-5, 5, -5, 1}), s(ScalarType::Long, {4}, {64, 63, -1, 62});
  ASSERT_EQ(run([&](KernelContext& c) { portable::bitwise_left_shift_tensor_out(c, x.t, s.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{0, INT64_MIN, 0, int64_t{1} << 62}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::bitwise_right_shift_tensor_out(c, x.t, s.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{-1, 0, -1, 0}));
  U8 u(ScalarType::Byte, {2}, {200, 7}), uo(ScalarType::Byte, {2});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::bitwise_right_shift_tensor_scalar_out(c, u.t, Scalar(int64_t{8}), uo.t);
            }),
            Error::Ok);
  EXPECT_EQ(uo.data, (std::vector<uint8_t>{0, 0}));
  // Integer powers wrap and negative exponents give 0 except for bases 1 and -1.
  I64 base(ScalarType::Long, {4}, {3, -1, 1, 2}), e(ScalarType::Long, {4}, {41, -3, -4, -1});
  ASSERT_EQ(run([&](KernelContext& c) { portable::pow_tensor_tensor_out(c, base.t, e.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data[0], -420491770248316829LL);  // 3^41 wrapped to int64, as torch gives
  EXPECT_EQ(out.data[1], -1);
  EXPECT_EQ(out.data[2], 1);
  EXPECT_EQ(out.data[3], 0);
}

TEST(BinaryOps, ResultsCastIntoOtherOutDtypes) {
  // PyTorch lets a comparison write a Float out and an Int result a Double one.
  I8 a(ScalarType::Char, {3}, {-1, 0, 5});
  F32 out(ScalarType::Float, {3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::gt_scalar_out(c, a.t, Scalar(0.5), out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0.0f, 0.0f, 1.0f}));
  Owned<double> d(ScalarType::Double, {3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::remainder_scalar_out(c, a.t, Scalar(int64_t{-2}), d.t); }),
            Error::Ok);
  EXPECT_EQ(d.data, (std::vector<double>{-1.0, 0.0, -1.0}));
}

TEST(BinaryOps, ChannelsLastOperandsOfOneLayoutWork) {
  // Values laid out channels-last in memory: element (n, c, h, w) at ((n * H + h) * W + w) * C + c.
  const std::vector<float> av = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<float> bv = {12, 2, 10, 4, 8, 6, 6, 8, 4, 10, 2, 12};
  F32 a(ScalarType::Float, {1, 3, 2, 2}, av, kChannelsLast), b(ScalarType::Float, {1, 3, 2, 2}, bv, kChannelsLast);
  F32 out(ScalarType::Float, {1, 3, 2, 2}, {}, kChannelsLast);
  B eq(ScalarType::Bool, {1, 3, 2, 2}, {}, kChannelsLast);
  ASSERT_EQ(run([&](KernelContext& c) { portable::minimum_out(c, a.t, b.t, out.t); }), Error::Ok);
  for (size_t k = 0; k < av.size(); ++k) EXPECT_EQ(out.data[k], fminf(av[k], bv[k])) << k;
  ASSERT_EQ(run([&](KernelContext& c) { portable::eq_tensor_out(c, a.t, b.t, eq.t); }), Error::Ok);
  for (size_t k = 0; k < av.size(); ++k) EXPECT_EQ(eq.data[k], av[k] == bv[k] ? 1 : 0) << k;
  // A one-element operand broadcasts into any layout.
  F32 one(ScalarType::Float, {1}, {6.0f});
  ASSERT_EQ(run([&](KernelContext& c) { portable::add_out(c, a.t, one.t, Scalar(int64_t{1}), out.t); }), Error::Ok);
  for (size_t k = 0; k < av.size(); ++k) EXPECT_EQ(out.data[k], av[k] + 6.0f) << k;
  // Other broadcasts, or a contiguous operand with a channels-last out, need a layout-aware walk: refused.
  F32 per_channel(ScalarType::Float, {1, 3, 1, 1}, {1, 2, 3}), contiguous(ScalarType::Float, {1, 3, 2, 2}, av);
  EXPECT_EQ(run([&](KernelContext& c) { portable::mul_out(c, a.t, per_channel.t, out.t); }), Error::NotSupported);
  EXPECT_TRUE(logged("mul.out: input 1 is broadcast or has another dim order than a non-contiguous out"))
      << testing::last_log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::lt_tensor_out(c, a.t, contiguous.t, eq.t); }), Error::NotSupported);
}

TEST(BinaryOps, ComparisonsPromoteAcrossDtypes) {
  // int8 -1 against uint8 255 compares as int16 (-1 < 255), not as a wrapped byte.
  I8 a(ScalarType::Char, {2}, {-1, 3});
  U8 b(ScalarType::Byte, {2}, {255, 3});
  B out(ScalarType::Bool, {2});
  ASSERT_EQ(run([&](KernelContext& c) { portable::lt_tensor_out(c, a.t, b.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<uint8_t>{1, 0}));
  // An integer tensor against a float scalar compares in float: 3 < 3.5.
  ASSERT_EQ(run([&](KernelContext& c) { portable::lt_scalar_out(c, a.t, Scalar(3.5), out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<uint8_t>{1, 1}));
}

}  // namespace
}  // namespace ember
