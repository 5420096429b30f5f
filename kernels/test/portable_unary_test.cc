// The unary, activation, creation and random portable kernels called directly: the overloads and arguments an
// exported program cannot reach (lift_fresh_copy, Int outs of arange with fractional steps, int64 overflow of the
// range, bounded outputs resized by arange, memory formats, the generator's seeding), and each refusal's message.
// tests/kernels/test_portable_unary.py compares the same kernels with eager through exported programs.
#include <math.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/kernels.h"
#include "kernels/portable/util/random_util.h"
#include "kernels/test/owned_tensor.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

using testing::logged;
using testing::Owned;
using testing::run;

const std::string& log() { return testing::last_log(); }

using F32 = Owned<float>;
using I32 = Owned<int32_t>;
using I64 = Owned<int64_t>;

// --- arange ----------------------------------------------------------------------------------------------------

TEST(Arange, IntOutWithAFractionalStepHasPyTorchsLengthAndStartEverywhere) {
  // ceil((3 - 0) / 0.5) = 6 elements; the int64 step is 0, so all are 0 (eager gives the same).
  I32 out(ScalarType::Int, {6});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(int64_t{0}), Scalar(int64_t{3}), Scalar(0.5), out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data, std::vector<int32_t>(6, 0));
}

TEST(Arange, LongOutCountsInIntegers) {
  I64 out(ScalarType::Long, {4});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(int64_t{10}), Scalar(int64_t{-1}), Scalar(int64_t{-3}), out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{10, 7, 4, 1}));
  // Beyond double's precision the count is still exact: 2^53 + 1 to 2^53 + 3 by 1 is 2 elements.
  I64 big(ScalarType::Long, {2});
  const int64_t b = (int64_t{1} << 53) + 1;
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(b), Scalar(b + 2), Scalar(int64_t{1}), big.t);
            }),
            Error::Ok);
  EXPECT_EQ(big.data, (std::vector<int64_t>{b, b + 1}));
}

TEST(Arange, EndOnlyOverloadAndFloatValues) {
  F32 out(ScalarType::Float, {5});
  ASSERT_EQ(run([&](KernelContext& c) { portable::arange_out(c, Scalar(4.5), out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST(Arange, BoundedOutIsResizedToTheRange) {
  F32 out(ScalarType::Float, {16}, {}, {}, 16);  // bounded-dynamic, room for its 16 elements
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(1.0), Scalar(2.0), Scalar(0.25), out.t);
            }),
            Error::Ok);
  ASSERT_EQ(out.t.numel(), 4);
  EXPECT_FLOAT_EQ(out.data[3], 1.75f);
  // A range beyond the bound's capacity is refused.
  EXPECT_EQ(run([&](KernelContext& c) { portable::arange_out(c, Scalar(int64_t{17}), out.t); }),
            Error::InvalidArgument);
}

TEST(Arange, RefusalsNameTheProblem) {
  F32 out(ScalarType::Float, {4});
  EXPECT_EQ(run([&](KernelContext& c) { portable::arange_out(c, Scalar(int64_t{10}), out.t); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("arange.out: out has 4 elements, the range 0 to 10 by 1 has 10"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::arange_start_out(c, Scalar(0.0), Scalar(1.0), Scalar(NAN), out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(0.0), Scalar(INFINITY), Scalar(1.0), out.t);
            }),
            Error::InvalidArgument);
  // 1e12 elements: more than any tensor holds.
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(0.0), Scalar(1e12), Scalar(1.0), out.t);
            }),
            Error::InvalidArgument);
  I64 lout(ScalarType::Long, {4});
  // int64 overflow of end - start (PyTorch's own arithmetic would wrap), a step that is 0 as int64, a bound past
  // int64.
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(INT64_MIN), Scalar(INT64_MAX), Scalar(int64_t{1}), lout.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("possible overflow"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(int64_t{0}), Scalar(INT64_MIN), Scalar(int64_t{-1}), lout.t);
            }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(int64_t{0}), Scalar(int64_t{3}), Scalar(0.5), lout.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("step must be nonzero"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::arange_start_out(c, Scalar(0.0), Scalar(1e300), Scalar(1e299), lout.t);
            }),
            Error::InvalidArgument);
  F32 two_d(ScalarType::Float, {2, 2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::arange_out(c, Scalar(int64_t{4}), two_d.t); }),
            Error::InvalidArgument);
}

// --- creation and fill -----------------------------------------------------------------------------------------

TEST(Creation, OnesZerosScalarTensorAndFill) {
  std::vector<int64_t> shape{2, 2};
  Owned<Half> ones(ScalarType::Half, {2, 2});
  ASSERT_EQ(run([&](KernelContext& c) { portable::ones_out(c, ArrayRef<int64_t>(shape.data(), 2), ones.t); }),
            Error::Ok);
  for (const Half& h : ones.data) EXPECT_EQ(static_cast<float>(h), 1.0f);
  Owned<uint8_t> zeros(ScalarType::Bool, {2, 2}, {1, 1, 1, 1});  // bool storage
  ASSERT_EQ(run([&](KernelContext& c) { portable::zeros_out(c, ArrayRef<int64_t>(shape.data(), 2), zeros.t); }),
            Error::Ok);
  EXPECT_EQ(zeros.data, (std::vector<uint8_t>(4, 0)));
  std::vector<int64_t> wrong{3};
  EXPECT_EQ(run([&](KernelContext& c) { portable::zeros_out(c, ArrayRef<int64_t>(wrong.data(), 1), zeros.t); }),
            Error::InvalidArgument);
  I32 scalar(ScalarType::Int, {});
  ASSERT_EQ(run([&](KernelContext& c) { portable::scalar_tensor_out(c, Scalar(-7.9), scalar.t); }), Error::Ok);
  EXPECT_EQ(scalar.data[0], -7);  // truncated, as eager stores a float scalar into an int tensor
  F32 self(ScalarType::Float, {3}), out(ScalarType::Float, {3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::fill_scalar_out(c, self.t, Scalar(true), out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1, 1, 1}));
  Owned<double> value(ScalarType::Double, {}, {2.5});
  ASSERT_EQ(run([&](KernelContext& c) { portable::fill_tensor_out(c, self.t, value.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{2.5f, 2.5f, 2.5f}));
}

TEST(Creation, OverflowingValuesAreRefusedAsInPyTorch) {
  Owned<int8_t> i8(ScalarType::Char, {3}), out8(ScalarType::Char, {3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::fill_scalar_out(c, i8.t, Scalar(int64_t{300}), out8.t); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("fill.Scalar_out: value 300 cannot be converted to Char without overflow"), std::string::npos)
      << log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::full_like_out(c, i8.t, Scalar(NAN), Optional<int64_t>(), out8.t); }),
            Error::InvalidArgument);
  Owned<Half> h(ScalarType::Half, {2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::scalar_tensor_out(c, Scalar(1e6), h.t); }), Error::InvalidArgument);
  // The Tensor overload: a 1-d value is refused; out must have self's dtype.
  F32 self(ScalarType::Float, {3}), vec(ScalarType::Float, {1}, {1.0f});
  EXPECT_EQ(run([&](KernelContext& c) { portable::fill_tensor_out(c, self.t, vec.t, self.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::fill_scalar_out(c, self.t, Scalar(1.0), i8.t); }),
            Error::InvalidArgument);
}

TEST(Creation, MemoryFormatMustMatchOut) {
  std::vector<int64_t> shape{1, 2, 2, 2};
  F32 contiguous(ScalarType::Float, {1, 2, 2, 2});
  F32 channels_last(ScalarType::Float, {1, 2, 2, 2}, {}, {0, 2, 3, 1});
  ArrayRef<int64_t> s(shape.data(), shape.size());
  EXPECT_EQ(run([&](KernelContext& c) { portable::empty_out(c, s, Optional<int64_t>(int64_t{2}), channels_last.t); }),
            Error::Ok);
  EXPECT_EQ(run([&](KernelContext& c) { portable::empty_out(c, s, Optional<int64_t>(int64_t{0}), contiguous.t); }),
            Error::Ok);
  EXPECT_EQ(run([&](KernelContext& c) { portable::empty_out(c, s, Optional<int64_t>(int64_t{2}), contiguous.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::full_like_out(c, contiguous.t, Scalar(1.0), Optional<int64_t>(int64_t{0}), channels_last.t);
            }),
            Error::InvalidArgument);
  // full_like into a channels-last out under preserve: every element is the value whatever the order.
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::full_like_out(c, contiguous.t, Scalar(3.0), Optional<int64_t>(int64_t{1}), channels_last.t);
            }),
            Error::Ok);
  EXPECT_EQ(channels_last.data, std::vector<float>(8, 3.0f));
}

TEST(Creation, CopiesKeepDtypeShapeAndDimOrder) {
  F32 self(ScalarType::Float, {2, 3}, {1, 2, 3, 4, 5, 6}), out(ScalarType::Float, {2, 3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::lift_fresh_copy_out(c, self.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, self.data);
  out.data.assign(6, 0.0f);
  ASSERT_EQ(run([&](KernelContext& c) { portable::detach_copy_out(c, self.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, self.data);
  out.data.assign(6, 0.0f);
  ASSERT_EQ(run([&](KernelContext& c) { portable::alias_copy_out(c, self.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, self.data);
  Owned<double> wider(ScalarType::Double, {2, 3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::detach_copy_out(c, self.t, wider.t); }), Error::InvalidArgument);
  EXPECT_NE(log().find("detach_copy.out: self is Float but out is Double"), std::string::npos) << log();
  F32 transposed(ScalarType::Float, {2, 3}, {}, {1, 0});
  EXPECT_EQ(run([&](KernelContext& c) { portable::lift_fresh_copy_out(c, self.t, transposed.t); }),
            Error::NotSupported);
}

// --- unary math and activations --------------------------------------------------------------------------------

TEST(Unary, IntegerInputIntoAFloatOutAcrossLoadBlocks) {
  // 200 elements: more than one block of the converting loader.
  std::vector<int32_t> v(200);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i) - 100;
  I32 in(ScalarType::Int, {200}, v);
  Owned<double> out(ScalarType::Double, {200});
  ASSERT_EQ(run([&](KernelContext& c) { portable::sin_out(c, in.t, out.t); }), Error::Ok);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_DOUBLE_EQ(out.data[i], sin(static_cast<double>(v[i])));
  I32 int_out(ScalarType::Int, {200});
  EXPECT_EQ(run([&](KernelContext& c) { portable::sin_out(c, in.t, int_out.t); }), Error::InvalidArgument);
  EXPECT_NE(log().find("sin.out: out is Int; the result is floating point"), std::string::npos) << log();
}

TEST(Unary, DtypeAndDimOrderRefusals) {
  Owned<uint8_t> quantized(ScalarType::QUInt8, {4});
  F32 out(ScalarType::Float, {4});
  EXPECT_EQ(run([&](KernelContext& c) { portable::cos_out(c, quantized.t, out.t); }), Error::InvalidArgument);
  EXPECT_NE(log().find("cos.out: self's dtype QUInt8 is not supported"), std::string::npos) << log();
  F32 f(ScalarType::Float, {4});
  EXPECT_EQ(run([&](KernelContext& c) { portable::bitwise_not_out(c, f.t, out.t); }), Error::InvalidArgument);
  I32 i(ScalarType::Int, {4});
  EXPECT_EQ(run([&](KernelContext& c) { portable::floor_out(c, i.t, out.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::isnan_out(c, f.t, out.t); }), Error::InvalidArgument);
  F32 nchw(ScalarType::Float, {1, 2, 2, 2}), nhwc(ScalarType::Float, {1, 2, 2, 2}, {}, {0, 2, 3, 1});
  EXPECT_EQ(run([&](KernelContext& c) { portable::tan_out(c, nchw.t, nhwc.t); }), Error::NotSupported);
  EXPECT_EQ(run([&](KernelContext& c) { portable::tan_out(c, nhwc.t, nhwc.t); }), Error::Ok);  // same order, in place
  F32 wrong(ScalarType::Float, {5});
  EXPECT_EQ(run([&](KernelContext& c) { portable::erf_out(c, f.t, wrong.t); }), Error::InvalidArgument);
}

TEST(Unary, LogicalNotIntoAnIntOutAndRoundHalfEven) {
  F32 in(ScalarType::Float, {5}, {0.0f, -0.0f, NAN, 2.5f, -0.5f});
  I64 out(ScalarType::Long, {5});
  ASSERT_EQ(run([&](KernelContext& c) { portable::logical_not_out(c, in.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int64_t>{1, 1, 0, 0, 0}));
  F32 r(ScalarType::Float, {5});
  ASSERT_EQ(run([&](KernelContext& c) { portable::round_out(c, in.t, r.t); }), Error::Ok);
  EXPECT_EQ(r.data[3], 2.0f);
  EXPECT_TRUE(std::signbit(r.data[4]) && r.data[4] == 0.0f);  // -0.5 rounds to -0
}

TEST(Activation, GluChecksAndValues) {
  F32 x(ScalarType::Float, {2, 2}, {1, 2, 0, 0}), out(ScalarType::Float, {2, 1});
  ASSERT_EQ(run([&](KernelContext& c) { portable::glu_out(c, x.t, -1, out.t); }), Error::Ok);
  EXPECT_FLOAT_EQ(out.data[0], 1.0f / (1.0f + expf(-2.0f)));
  EXPECT_FLOAT_EQ(out.data[1], 0.0f);
  F32 odd(ScalarType::Float, {2, 3}), scalar(ScalarType::Float, {});
  EXPECT_EQ(run([&](KernelContext& c) { portable::glu_out(c, odd.t, 1, out.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::glu_out(c, scalar.t, 0, scalar.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::glu_out(c, x.t, 2, out.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::glu_out(c, x.t, 0, out.t); }),
            Error::InvalidArgument);  // needs [1, 2]
  I32 ints(ScalarType::Int, {2, 2}), iout(ScalarType::Int, {2, 1});
  EXPECT_EQ(run([&](KernelContext& c) { portable::glu_out(c, ints.t, 1, iout.t); }), Error::InvalidArgument);
}

// --- random ----------------------------------------------------------------------------------------------------

TEST(Random, SeededCallsRepeatAndSuccessiveCallsDiffer) {
  std::vector<int64_t> shape{1000};
  ArrayRef<int64_t> s(shape.data(), 1);
  F32 a(ScalarType::Float, {1000}), b(ScalarType::Float, {1000}), c2(ScalarType::Float, {1000});
  portable::seed_random(42);
  ASSERT_EQ(run([&](KernelContext& c) { portable::rand_out(c, s, a.t); }), Error::Ok);
  ASSERT_EQ(run([&](KernelContext& c) { portable::rand_out(c, s, b.t); }), Error::Ok);
  portable::seed_random(42);
  ASSERT_EQ(run([&](KernelContext& c) { portable::rand_out(c, s, c2.t); }), Error::Ok);
  EXPECT_EQ(a.data, c2.data);
  EXPECT_NE(a.data, b.data);
  for (float v : a.data) EXPECT_TRUE(v >= 0.0f && v < 1.0f);
  // Half has 11 bits: a value as close to 1 as its grid allows must not round up to 1.
  Owned<Half> h(ScalarType::Half, {1000});
  ASSERT_EQ(run([&](KernelContext& c) { portable::rand_out(c, s, h.t); }), Error::Ok);
  for (const Half& v : h.data) EXPECT_LT(static_cast<float>(v), 1.0f);
  portable::seed_random(portable::kDefaultRandomSeed);
}

TEST(Random, DropoutEvalIsIdentityAndArgumentsAreChecked) {
  F32 x(ScalarType::Float, {3}, {1.0f, NAN, -2.0f}), out(ScalarType::Float, {3});
  Owned<uint8_t> mask(ScalarType::Bool, {3});  // bool storage
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::native_dropout_out(c, x.t, 0.9, Optional<bool>(false), out.t, mask.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data[0], 1.0f);
  EXPECT_TRUE(isnan(out.data[1]));
  EXPECT_EQ(mask.data, (std::vector<uint8_t>{1, 1, 1}));
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_dropout_out(c, x.t, 1.5, Optional<bool>(true), out.t, mask.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("native_dropout.out: p must be in [0, 1], got 1.5"), std::string::npos) << log();
  // train=None trains, as in PyTorch.
  EXPECT_EQ(run([&](KernelContext& c) { portable::native_dropout_out(c, x.t, NAN, Optional<bool>(), out.t, mask.t); }),
            Error::InvalidArgument);
  F32 float_mask(ScalarType::Float, {3});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_dropout_out(c, x.t, 0.5, Optional<bool>(true), out.t, float_mask.t);
            }),
            Error::InvalidArgument);
}

}  // namespace
}  // namespace ember
