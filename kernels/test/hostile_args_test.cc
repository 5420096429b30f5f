// Kernels called with the arguments a hostile (or careless) program can carry: NaN and infinite scalars where
// they become integers, bounds or divisors; sizes, strides and steps beyond int32 or int64; integer overflow
// (INT_MIN / -1, -INT_MIN, sums); zero and NaN quantization scales. Each call must give a named kernel error or
// PyTorch's result, never undefined behaviour: the sanitizer builds (--config=asan/ubsan) run this file too.
//
// Built twice: against the portable-only kernel set, and (EMBER_TEST_OPTIMIZED) the default one, whose Float
// clamps and convolutions are kernels/optimized's.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/kernels.h"
#include "kernels/prim_ops/kernels.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/channel_params.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/core/numeric.h"
#include "kernels/test/owned_tensor.h"
#include "runtime/core/test/recording_pal.h"
#ifdef EMBER_TEST_OPTIMIZED
#include "kernels/optimized/kernels.h"
#endif

namespace ember {
namespace {

using testing::logged;
using testing::Owned;
using testing::run;

using F32 = Owned<float>;
using I32 = Owned<int32_t>;
using I64 = Owned<int64_t>;
using I8 = Owned<int8_t>;

const std::string& log() { return testing::last_log(); }

// --- conversions and wrapping (runtime/core/numeric.h) --------------------------------------------------------

TEST(Numeric, FloatToIntegerSaturatesAndNanIsZero) {
  EXPECT_EQ(convert<int32_t>(NAN), 0);
  EXPECT_EQ(convert<int32_t>(INFINITY), INT32_MAX);
  EXPECT_EQ(convert<int32_t>(-INFINITY), INT32_MIN);
  EXPECT_EQ(convert<int32_t>(3e9), INT32_MAX);
  EXPECT_EQ(convert<int32_t>(-2147483648.0), INT32_MIN);
  EXPECT_EQ(convert<int32_t>(-3.7f), -3);
  EXPECT_EQ(convert<int64_t>(1e30), INT64_MAX);
  EXPECT_EQ(convert<int64_t>(9.2233720368547758e18), INT64_MAX);  // 2^63 itself
  EXPECT_EQ(convert<uint8_t>(300.0f), 255);
  EXPECT_EQ(convert<uint8_t>(-3.0f), 0);
  EXPECT_EQ(convert<int8_t>(-1e10), -128);
  EXPECT_EQ(convert<float>(1.5), 1.5f);
  EXPECT_EQ(Scalar(NAN).to<int64_t>(), 0);
  EXPECT_EQ(Scalar(1e300).to<int16_t>(), INT16_MAX);
}

TEST(Numeric, FitsMatchesPyTorchsOverflowCheck) {
  EXPECT_TRUE(fits<int32_t>(2.5));
  EXPECT_TRUE(fits<int32_t>(2147483647.9));
  EXPECT_FALSE(fits<int32_t>(2147483648.0));
  EXPECT_TRUE(fits<int32_t>(-2147483648.0));
  EXPECT_FALSE(fits<int32_t>(NAN));
  EXPECT_FALSE(fits<uint8_t>(int64_t{300}));
  EXPECT_FALSE(fits<uint8_t>(int64_t{-1}));
  EXPECT_TRUE(fits<int64_t>(INT64_MIN));
  EXPECT_TRUE(fits<float>(NAN));
  EXPECT_TRUE(fits<float>(-INFINITY));
  EXPECT_FALSE(fits<float>(1e300));
  EXPECT_TRUE(fits<double>(1e300));
}

TEST(Numeric, IntegersWrap) {
  EXPECT_EQ(wrapping_add<int32_t>(INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(wrapping_neg<int32_t>(INT32_MIN), INT32_MIN);
  EXPECT_EQ(wrapping_mul<int64_t>(INT64_MAX, 2), -2);
  EXPECT_EQ(wrapping_mul<int16_t>(-32768, -32768), 0);  // promoted to int, this overflowed int
  EXPECT_EQ(wrapping_mul<int8_t>(100, 100), 16);        // torch: int8 100 * 100 = 16
  EXPECT_EQ(wrapping_sub<uint8_t>(0, 1), 255);
}

// --- portable kernels -----------------------------------------------------------------------------------------

TEST(Portable, IntegerArithmeticWrapsLikePyTorch) {
  I32 a(ScalarType::Int, {3}, {INT32_MAX, INT32_MIN, 100000}), b(ScalarType::Int, {3}, {1, -1, 100000});
  I32 out(ScalarType::Int, {3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::add_out(c, a.t, b.t, Scalar(int64_t{1}), out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int32_t>{INT32_MIN, INT32_MAX, 200000}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::mul_out(c, a.t, b.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data[2], static_cast<int32_t>(1410065408));  // 10^10 mod 2^32, as torch gives
  ASSERT_EQ(run([&](KernelContext& c) { portable::neg_out(c, a.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data[1], INT32_MIN);
  ASSERT_EQ(run([&](KernelContext& c) { portable::abs_out(c, a.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data[1], INT32_MIN);
  I32 sum(ScalarType::Int, {});
  const int64_t dim0[1] = {0};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::sum_out(c, a.t, ArrayRef<int64_t>(dim0), false, Optional<int64_t>(), sum.t);
            }),
            Error::Ok);
  EXPECT_EQ(sum.data[0], static_cast<int32_t>(int64_t{INT32_MAX} + INT32_MIN + 100000));
}

TEST(Portable, FloatScalarsIntoIntegerResultsAreRefused) {
  I64 a(ScalarType::Long, {2}, {1, 2}), out(ScalarType::Long, {2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::add_scalar_out(c, a.t, Scalar(NAN), Scalar(int64_t{1}), out.t); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("add.Scalar_out: result type Float can't be cast to the desired output type Long"),
            std::string::npos)
      << log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::add_out(c, a.t, a.t, Scalar(2.5), out.t); }), Error::InvalidArgument);
  EXPECT_NE(log().find("add.out: alpha 2.5 is a float but the inputs are Long"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) { portable::mul_scalar_out(c, a.t, Scalar(1e300), out.t); }),
            Error::InvalidArgument);
  // An integer scalar beyond the dtype wraps, as torch.tensor([1], dtype=int32) + 2**40 does.
  I32 ai(ScalarType::Int, {1}, {1}), oi(ScalarType::Int, {1});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::add_scalar_out(c, ai.t, Scalar(int64_t{1} << 40), Scalar(int64_t{1}), oi.t);
            }),
            Error::Ok);
  EXPECT_EQ(oi.data[0], 1);
  // Floats keep their floats: 1 / 0 is inf, 0 / 0 NaN (IEEE, as torch).
  F32 x(ScalarType::Float, {2}, {1.0f, 0.0f}), y(ScalarType::Float, {2});
  ASSERT_EQ(run([&](KernelContext& c) { portable::div_scalar_out(c, x.t, Scalar(0.0), y.t); }), Error::Ok);
  EXPECT_TRUE(isinf(y.data[0]) && isnan(y.data[1]));
}

#ifndef EMBER_TEST_OPTIMIZED  // there, Float clamps are kernels/optimized's (tested below)
TEST(Portable, NanClampBoundsGiveNanAndLowAboveHighGivesHigh) {
  F32 x(ScalarType::Float, {3}, {-2.0f, 0.5f, 3.0f}), out(ScalarType::Float, {3});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::clamp_out(c, x.t, Optional<Scalar>(Scalar(NAN)), Optional<Scalar>(), out.t);
            }),
            Error::Ok);
  for (float v : out.data) EXPECT_TRUE(isnan(v));
  ASSERT_EQ(run([&](KernelContext& c) { portable::hardtanh_out(c, x.t, Scalar(-1.0), Scalar(NAN), out.t); }),
            Error::Ok);
  for (float v : out.data) EXPECT_TRUE(isnan(v));
  // torch.nn.functional.hardtanh(x, 2.0, 1.0) is min(max(x, 2), 1): every element 1.
  ASSERT_EQ(run([&](KernelContext& c) { portable::hardtanh_out(c, x.t, Scalar(2.0), Scalar(1.0), out.t); }), Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1.0f, 1.0f, 1.0f}));
}
#endif

TEST(Portable, IntegerClampBoundsMustFitTheDtype) {
  I32 x(ScalarType::Int, {3}, {1, 5, 9}), out(ScalarType::Int, {3});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::clamp_out(c, x.t, Optional<Scalar>(Scalar(NAN)), Optional<Scalar>(), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("clamp.out: bounds [nan, inf] do not fit Int"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::hardtanh_out(c, x.t, Scalar(int64_t{-(int64_t{1} << 40)}), Scalar(int64_t{1} << 40), out.t);
            }),
            Error::InvalidArgument);
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::clamp_out(c, x.t, Optional<Scalar>(Scalar(int64_t{3})), Optional<Scalar>(Scalar(7.5)), out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int32_t>{3, 5, 7}));
}

TEST(Portable, FullRefusesValuesTheDtypeCannotHold) {
  I32 out(ScalarType::Int, {2});
  const int64_t size[1] = {2};
  for (Scalar v : {Scalar(NAN), Scalar(1e10), Scalar(int64_t{1} << 40), Scalar(INFINITY)}) {
    EXPECT_EQ(run([&](KernelContext& c) { portable::full_out(c, ArrayRef<int64_t>(size), v, out.t); }),
              Error::InvalidArgument);
    EXPECT_NE(log().find("cannot be converted to Int without overflow"), std::string::npos) << log();
  }
  ASSERT_EQ(run([&](KernelContext& c) { portable::full_out(c, ArrayRef<int64_t>(size), Scalar(2.5), out.t); }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int32_t>{2, 2}));
  Owned<Half> h(ScalarType::Half, {2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::full_out(c, ArrayRef<int64_t>(size), Scalar(1e10), h.t); }),
            Error::InvalidArgument);
  F32 f(ScalarType::Float, {2});
  ASSERT_EQ(run([&](KernelContext& c) { portable::full_out(c, ArrayRef<int64_t>(size), Scalar(NAN), f.t); }),
            Error::Ok);
  EXPECT_TRUE(isnan(f.data[0]));
}

TEST(Portable, FloatToIntegerCopiesAreDefined) {
  F32 x(ScalarType::Float, {4}, {NAN, 1e30f, -1e30f, -3.7f});
  I32 out(ScalarType::Int, {4});
  ASSERT_EQ(run([&](KernelContext& c) { portable::to_copy_out(c, x.t, false, Optional<int64_t>(), out.t); }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<int32_t>{0, INT32_MAX, INT32_MIN, -3}));
}

TEST(Portable, SizesBeyondInt32NeverMatchAnOutput) {
  // expand to 2^32 + 4: truncated to int32 it would be 4, matching out, while the copy loops 2^32 + 4 times.
  F32 x(ScalarType::Float, {1}, {1.0f}), out(ScalarType::Float, {4});
  const int64_t size[1] = {(int64_t{1} << 32) + 4};
  EXPECT_EQ(run([&](KernelContext& c) { portable::expand_copy_out(c, x.t, ArrayRef<int64_t>(size), false, out.t); }),
            Error::InvalidArgument);
  const int64_t view[2] = {INT64_MAX, 4};
  EXPECT_EQ(run([&](KernelContext& c) { portable::view_copy_out(c, out.t, ArrayRef<int64_t>(view), out.t); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("view_copy.out: size 9223372036854775807 of dim 0 is not in [-1, 2^31)"), std::string::npos)
      << log();
  const int64_t neg[1] = {-3};
  EXPECT_EQ(run([&](KernelContext& c) { portable::view_copy_out(c, out.t, ArrayRef<int64_t>(neg), out.t); }),
            Error::InvalidArgument);
  const int64_t full_size[1] = {-4};
  EXPECT_EQ(run([&](KernelContext& c) { portable::full_out(c, ArrayRef<int64_t>(full_size), Scalar(1.0), out.t); }),
            Error::InvalidArgument);
}

TEST(Portable, HugeSliceStepTakesOneElement) {
  F32 x(ScalarType::Float, {5}, {0, 1, 2, 3, 4}), out(ScalarType::Float, {1});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::slice_copy_out(c, x.t, 0, Optional<int64_t>(int64_t{1}), Optional<int64_t>(INT64_MAX),
                                       INT64_MAX, out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data[0], 1.0f);  // torch: x[1::2**63-1] == [1.]
  F32 two(ScalarType::Float, {2});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::slice_copy_out(c, x.t, 0, Optional<int64_t>(INT64_MIN), Optional<int64_t>(), 3, two.t);
            }),
            Error::Ok);
  EXPECT_EQ(two.data, (std::vector<float>{0, 3}));
}

TEST(Portable, PoolAndConvolutionGeometryBeyondInt32IsRefused) {
  F32 x(ScalarType::Float, {1, 1, 4, 4}), out(ScalarType::Float, {1, 1, 2, 2});
  I64 idx(ScalarType::Long, {1, 1, 2, 2});
  const int64_t two[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1};
  const int64_t huge[2] = {int64_t{1} << 62, int64_t{1} << 62};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::max_pool2d_with_indices_out(c, x.t, ArrayRef<int64_t>(two), ArrayRef<int64_t>(two),
                                                    ArrayRef<int64_t>(zero), ArrayRef<int64_t>(huge), false, out.t,
                                                    idx.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("max_pool2d_with_indices.out: invalid geometry"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::avg_pool2d_out(c, x.t, ArrayRef<int64_t>(huge), ArrayRef<int64_t>(two), ArrayRef<int64_t>(zero),
                                       true, true, Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::avg_pool2d_out(c, x.t, ArrayRef<int64_t>(two), ArrayRef<int64_t>(two), ArrayRef<int64_t>(zero),
                                       false, true, Optional<int64_t>(int64_t{0}), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("divisor_override must not be 0"), std::string::npos) << log();
  F32 w(ScalarType::Float, {1, 1, 1, 1}, {1.0f});
  for (ArrayRef<int64_t> stride : {ArrayRef<int64_t>(huge), ArrayRef<int64_t>(one)}) {
    const bool bad_stride = stride.data() == huge;
    EXPECT_EQ(run([&](KernelContext& c) {
                portable::convolution_out(c, x.t, w.t, nullptr, stride,
                                          bad_stride ? ArrayRef<int64_t>(zero) : ArrayRef<int64_t>(huge),
                                          ArrayRef<int64_t>(one), false, ArrayRef<int64_t>(zero), 1, out.t);
              }),
              Error::InvalidArgument);
    EXPECT_NE(log().find("all below 2^31"), std::string::npos) << log();
  }
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::convolution_clamp_out(c, x.t, w.t, nullptr, ArrayRef<int64_t>(one), ArrayRef<int64_t>(zero),
                                              ArrayRef<int64_t>(one), false, ArrayRef<int64_t>(zero), 1, NAN, 6.0,
                                              out.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("convolution_clamp.out: bounds [nan, 6] include NaN"), std::string::npos) << log();
}

TEST(Portable, IndicesOutOfRangeAreNamed) {
  F32 w(ScalarType::Float, {3, 2}, {1, 2, 3, 4, 5, 6}), out(ScalarType::Float, {2, 2});
  for (int64_t bad : {int64_t{3}, int64_t{-1}, INT64_MIN, INT64_MAX}) {
    I64 idx(ScalarType::Long, {2}, {0, bad});
    EXPECT_EQ(run([&](KernelContext& c) { portable::embedding_out(c, w.t, idx.t, -1, false, false, out.t); }),
              Error::InvalidArgument);
    EXPECT_NE(log().find("outside the 3 rows"), std::string::npos) << log();
  }
  for (int64_t bad : {int64_t{3}, int64_t{-4}, INT64_MIN, INT64_MAX}) {
    I64 idx(ScalarType::Long, {1}, {bad});
    F32 o(ScalarType::Float, {1, 2});
    const Tensor* list[1] = {&idx.t};
    EXPECT_EQ(run([&](KernelContext& c) { portable::index_out(c, w.t, OptionalTensorList(list, 1), o.t); }),
              Error::InvalidArgument);
    EXPECT_NE(log().find("is out of bounds for dim 0 of size 3"), std::string::npos) << log();
  }
  F32 o1(ScalarType::Float, {2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::select_copy_out(c, w.t, 0, INT64_MIN, o1.t); }),
            Error::InvalidArgument);
}

// A Bool tensor's byte may be anything but 0 or 1 (a .pte constant, a raw input file, a plan that places it on bytes
// another dtype wrote). Kernels read it as Bool8, nonzero meaning true; loading it as a C++ bool would be undefined
// (--config=ubsan's -fsanitize=bool names it), and what they store is always 0 or 1.
TEST(Portable, BoolBytesOtherThanZeroOrOneAreTrue) {
  using Bytes = Owned<uint8_t>;
  const std::vector<uint8_t> odd = {0, 236, 2, 1};
  Bytes mask(ScalarType::Bool, {4}, odd);
  F32 a(ScalarType::Float, {4}, {1, 2, 3, 4}), b(ScalarType::Float, {4}, {10, 20, 30, 40});
  F32 out(ScalarType::Float, {4});
  // where, on its direct path (every operand out's shape) and its broadcast path (other one column).
  ASSERT_EQ(run([&](KernelContext& c) { portable::where_out(c, mask.t, a.t, b.t, out.t); }), Error::Ok) << log();
  EXPECT_EQ(out.data, (std::vector<float>{10, 2, 3, 4}));
  Bytes mask22(ScalarType::Bool, {2, 2}, odd);
  F32 a22(ScalarType::Float, {2, 2}, {1, 2, 3, 4}), col(ScalarType::Float, {2, 1}, {10, 30});
  F32 out22(ScalarType::Float, {2, 2});
  ASSERT_EQ(run([&](KernelContext& c) { portable::where_out(c, mask22.t, a22.t, col.t, out22.t); }), Error::Ok);
  EXPECT_EQ(out22.data, (std::vector<float>{10, 2, 3, 4}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::masked_fill_scalar_out(c, a.t, mask.t, Scalar(9.0), out.t); }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1, 9, 9, 9}));
  // Bool outs: 0 or 1 only.
  Bytes bout(ScalarType::Bool, {4});
  ASSERT_EQ(run([&](KernelContext& c) { portable::logical_not_out(c, mask.t, bout.t); }), Error::Ok);
  EXPECT_EQ(bout.data, (std::vector<uint8_t>{1, 0, 0, 0}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::bitwise_not_out(c, mask.t, bout.t); }), Error::Ok);
  EXPECT_EQ(bout.data, (std::vector<uint8_t>{1, 0, 0, 0}));
  Bytes ones(ScalarType::Bool, {4}, {1, 1, 1, 1});
  ASSERT_EQ(run([&](KernelContext& c) { portable::eq_tensor_out(c, mask.t, ones.t, bout.t); }), Error::Ok);
  EXPECT_EQ(bout.data, (std::vector<uint8_t>{0, 1, 1, 1}));
  ASSERT_EQ(run([&](KernelContext& c) { portable::maximum_out(c, mask.t, mask.t, bout.t); }), Error::Ok);
  EXPECT_EQ(bout.data, (std::vector<uint8_t>{0, 1, 1, 1}));
  Bytes any(ScalarType::Bool, {});
  Bytes just_odd(ScalarType::Bool, {2}, {0, 236});
  ASSERT_EQ(run([&](KernelContext& c) { portable::any_all_out(c, just_odd.t, any.t); }), Error::Ok);
  EXPECT_EQ(any.data, (std::vector<uint8_t>{1}));
  // A copy into Float converts each element: 236 is true, 1.0.
  ASSERT_EQ(run([&](KernelContext& c) { portable::to_copy_out(c, mask.t, false, Optional<int64_t>(), out.t); }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{0, 1, 1, 1}));
}

// Bilinear resampling (plain and antialiased) walks the output's rows and columns outside its batch and channels:
// an empty batch must not leave 2^30 windows to compute for nothing (kernel_fuzz's timeout at 23b2c3e). Each call
// returns at once, with out resized to [0, 1, 32768, 32768] and nothing read or written.
TEST(Portable, BilinearResamplingOfAnEmptyBatchDoesNoWork) {
  F32 in(ScalarType::Float, {0, 1, 2, 2});
  F32 out(ScalarType::Float, {0, 1, 32768, 32768});
  const int64_t size[2] = {32768, 32768};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::upsample_bilinear2d_aa_out(c, in.t, ArrayRef<int64_t>(size, 2), false, Optional<double>(),
                                                   Optional<double>(), out.t);
            }),
            Error::Ok)
      << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::upsample_bilinear2d_vec_out(c, in.t, Optional<ArrayRef<int64_t>>(ArrayRef<int64_t>(size, 2)),
                                                    false, Optional<ArrayRef<double>>(), out.t);
            }),
            Error::Ok)
      << log();
}

// --- prim ops: Python's integer rules where int64 can follow them, named errors where it cannot -----------------

TEST(PrimOps, IntegerDivisionEdges) {
  EValue r;
  EXPECT_EQ(run([&](KernelContext& c) { prim::floordiv_scalar(c, Scalar(INT64_MIN), Scalar(int64_t{-1}), r); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("beyond int64"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) { prim::floordiv_scalar(c, Scalar(int64_t{7}), Scalar(int64_t{0}), r); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { prim::mod_scalar(c, INT64_MIN, 0, r); }), Error::InvalidArgument);
  ASSERT_EQ(run([&](KernelContext& c) { prim::mod_scalar(c, INT64_MIN, -1, r); }), Error::Ok);
  EXPECT_EQ(r.as_int(), 0);  // Python: -2**63 % -1 == 0
  ASSERT_EQ(run([&](KernelContext& c) { prim::floordiv_scalar(c, Scalar(int64_t{-7}), Scalar(int64_t{2}), r); }),
            Error::Ok);
  EXPECT_EQ(r.as_int(), -4);
  EXPECT_EQ(run([&](KernelContext& c) { prim::add_scalar(c, Scalar(INT64_MAX), Scalar(int64_t{1}), r); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { prim::mul_scalar(c, Scalar(INT64_MIN), Scalar(int64_t{-1}), r); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { prim::sub_scalar(c, Scalar(INT64_MIN), Scalar(int64_t{1}), r); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { prim::neg_scalar(c, Scalar(INT64_MIN), r); }), Error::InvalidArgument);
  ASSERT_EQ(run([&](KernelContext& c) { prim::floordiv_scalar(c, Scalar(1.0), Scalar(NAN), r); }), Error::Ok);
  EXPECT_TRUE(isnan(r.as_double()));
}

// --- quantized: scales, zero points -----------------------------------------------------------------------------

TEST(Quantized, ScalesMustBeFinitePositive) {
  F32 x(ScalarType::Float, {3}, {NAN, INFINITY, -1e30f});
  I8 q(ScalarType::Char, {3});
  for (double scale : {0.0, -1.0, double{NAN}, double{INFINITY}}) {
    EXPECT_EQ(run([&](KernelContext& c) {
                quantized::quantize_per_tensor_out(c, x.t, scale, 0, -128, 127, static_cast<int64_t>(ScalarType::Char),
                                                   q.t);
              }),
              Error::InvalidArgument);
    EXPECT_NE(log().find("must be positive"), std::string::npos) << log();
  }
  // NaN and infinite inputs are values, not errors: NaN maps to quant_min, +-inf saturate.
  ASSERT_EQ(run([&](KernelContext& c) {
              quantized::quantize_per_tensor_out(c, x.t, 0.1, 0, -128, 127, static_cast<int64_t>(ScalarType::Char),
                                                 q.t);
            }),
            Error::Ok);
  EXPECT_EQ(q.data, (std::vector<int8_t>{-128, 127, -128}));
  // A scale so small that 1 / scale overflows float is still a defined, saturated result.
  ASSERT_EQ(run([&](KernelContext& c) {
              quantized::quantize_per_tensor_out(c, x.t, 1e-300, 0, -128, 127, static_cast<int64_t>(ScalarType::Char),
                                                 q.t);
            }),
            Error::Ok);
  I8 a(ScalarType::Char, {2}, {1, 2}), o(ScalarType::Char, {2});
  EXPECT_EQ(run([&](KernelContext& c) { quantized::add_out(c, a.t, NAN, 0, a.t, 0.1, 0, 0.1, 0, -128, 127, o.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) {
              quantized::add_out(c, a.t, 1e-300, 0, a.t, 1e-300, 0, 1e300, 0, -128, 127, o.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("no usable requantization multiplier"), std::string::npos) << log();
}

// A linear's prepare step checks its shapes once when they cannot change (KernelArgs::shapes_fixed) and execute
// trusts it; when they can (a direct caller, a bounded-dynamic tensor), execute checks them as before. Both give
// the same bytes, and a call that does not fit is refused with the same message, at load or at execute.
struct LinearCall {
  I8 x, w, out;
  F32 scales;
  I32 bias;
  EValue values[11];
  EValue* args[11];
  alignas(16) uint8_t state[256];

  LinearCall(std::vector<int32_t> out_sizes, size_t x_capacity = 0)
      : x(ScalarType::Char, {2, 8}, {1, -5, 9, 12, -128, 127, 3, 0, 7, 7, -7, 100, -100, 2, 4, 8}, {}, x_capacity),
        w(ScalarType::Char, {3, 8},
          {1, 2, 3, 4, 5, 6, 7, 8, -8, -7, -6, -5, -4, -3, -2, -1, 127, -128, 0, 1, 64, 32, 16, 8}),
        out(ScalarType::Char, std::move(out_sizes)),
        scales(ScalarType::Float, {3}, {0.01f, 0.02f, 0.005f}),
        bias(ScalarType::Int, {3}, {100, -2000, 7}) {
    const EValue v[11] = {EValue(x.t),           EValue(0.05),         EValue(int64_t{1}), EValue(w.t),
                          EValue(scales.t),      EValue(bias.t),       EValue(0.1),        EValue(int64_t{-2}),
                          EValue(int64_t{-128}), EValue(int64_t{127}), EValue(out.t)};
    for (size_t i = 0; i < 11; ++i) values[i] = v[i], args[i] = &values[i];
  }
  Error prepare(bool values_fixed) {
    // Constants: the weight (3), its scales (4) and the bias (5).
    const LoadedKernelArgs loaded(args, 11, uint64_t{0x38}, values_fixed);
    EXPECT_LE(quantized::linear_memory(loaded).state, sizeof(state));
    testing::clear_log();
    return quantized::linear_prepare(loaded, state);
  }
  int32_t checked_rows() const { return reinterpret_cast<const quantized::RequantHeader*>(state)->checked_rows; }
  Error execute() {
    testing::clear_log();
    KernelContext ctx(state, Span<uint8_t>());
    quantized::linear_out(ctx, x.t, 0.05, 1, w.t, scales.t, &bias.t, 0.1, -2, -128, 127, out.t);
    return ctx.failure();
  }
};

TEST(Quantized, LinearShapesAreCheckedOnceWhenTheyCannotChange) {
  LinearCall fixed({2, 3}), unsure({2, 3});
  ASSERT_EQ(fixed.prepare(true), Error::Ok);
  EXPECT_EQ(fixed.checked_rows(), 2);
  ASSERT_EQ(unsure.prepare(false), Error::Ok);
  EXPECT_EQ(unsure.checked_rows(), 0);
  ASSERT_EQ(fixed.execute(), Error::Ok);
  ASSERT_EQ(unsure.execute(), Error::Ok);
  EXPECT_EQ(fixed.out.data, unsure.out.data);
  // A bounded-dynamic input may change shape between runs: nothing is recorded, execute checks.
  LinearCall dynamic({2, 3}, 32);
  ASSERT_EQ(dynamic.prepare(true), Error::Ok);
  EXPECT_EQ(dynamic.checked_rows(), 0);
}

TEST(Quantized, LinearOutputOfTheWrongShapeIsRefusedAtLoadOrAtExecute) {
  LinearCall at_load({2, 4});
  EXPECT_EQ(at_load.prepare(true), Error::InvalidArgument);
  EXPECT_NE(log().find("out must be the input's shape with 3 features"), std::string::npos) << log();
  LinearCall at_execute({2, 4});
  ASSERT_EQ(at_execute.prepare(false), Error::Ok);
  EXPECT_EQ(at_execute.execute(), Error::InvalidArgument);
  EXPECT_NE(log().find("out must be the input's shape with 3 features"), std::string::npos) << log();
}

// The int8 mul broadcasts as aten::mul does; shapes that do not, an out of another shape and an unusable
// multiplier are refused with the shapes or scales named.
TEST(Quantized, MulRefusesWhatDoesNotBroadcast) {
  I8 a(ScalarType::Char, {2, 3}, {1, 2, 3, 4, 5, 6}), b(ScalarType::Char, {3, 2}), row(ScalarType::Char, {3});
  I8 o(ScalarType::Char, {2, 3}), wrong(ScalarType::Char, {3, 3});
  EXPECT_EQ(run([&](KernelContext& c) { quantized::mul_out(c, a.t, 0.1, 0, b.t, 0.1, 0, 0.2, 0, -128, 127, o.t); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("self [2, 3] and other [3, 2] do not broadcast"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              quantized::mul_out(c, a.t, 0.1, 0, row.t, 0.1, 0, 0.2, 0, -128, 127, wrong.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("out must have the inputs' broadcast shape [2, 3]"), std::string::npos) << log();
  EXPECT_EQ(run([&](KernelContext& c) {
              quantized::mul_out(c, a.t, 1e300, 0, row.t, 1e300, 0, 1e-300, 0, -128, 127, o.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("no usable requantization multiplier"), std::string::npos) << log();
  // The row broadcasts along the first dim: (a - 0) * (1 - 0) * 0.1 * 0.1 / 0.01 = a.
  I8 ones(ScalarType::Char, {3}, {1, 1, 1});
  ASSERT_EQ(run([&](KernelContext& c) { quantized::mul_out(c, a.t, 0.1, 0, ones.t, 0.1, 0, 0.01, 0, -128, 127, o.t); }),
            Error::Ok);
  EXPECT_EQ(o.data, (std::vector<int8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Quantized, PerChannelZeroPointsBeyondInt32AreRefused) {
  I32 q(ScalarType::Int, {2, 1}, {INT32_MIN, INT32_MAX});
  F32 scales(ScalarType::Float, {2}, {0.5f, 0.5f}), out(ScalarType::Float, {2, 1});
  I64 zps(ScalarType::Long, {2}, {INT64_MAX, 0});
  EXPECT_EQ(run([&](KernelContext& c) {
              quantized::dequantize_per_channel_out(c, q.t, scales.t, &zps.t, 0, INT32_MIN, INT32_MAX,
                                                    static_cast<int64_t>(ScalarType::Int), Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("zero point 9223372036854775807 of channel 0 is outside int32"), std::string::npos) << log();
  I64 ok(ScalarType::Long, {2}, {INT32_MAX, INT32_MIN});
  ASSERT_EQ(run([&](KernelContext& c) {
              quantized::dequantize_per_channel_out(c, q.t, scales.t, &ok.t, 0, INT32_MIN, INT32_MAX,
                                                    static_cast<int64_t>(ScalarType::Int), Optional<int64_t>(), out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data[0], static_cast<float>((double{INT32_MIN} - INT32_MAX) * 0.5));
}

// --- found by tests/fuzz:kernel_fuzz ---------------------------------------------------------------------------

// A dim of size 0 has no maximum to subtract: softmax read the element before looking at the length (here the
// empty input has no storage at all, so the read was a null dereference).
TEST(Portable, SoftmaxOverAnEmptyDimReadsNothing) {
  F32 x(ScalarType::Float, {2, 0}), out(ScalarType::Float, {2, 0});
#ifdef EMBER_TEST_OPTIMIZED  // Float softmax is kernels/optimized's in this build (portable's is compiled without it)
  EXPECT_EQ(run([&](KernelContext& c) { optimized::softmax_out(c, x.t, 1, false, out.t); }), Error::Ok);
  EXPECT_EQ(run([&](KernelContext& c) { optimized::log_softmax_out(c, x.t, -1, false, out.t); }), Error::Ok);
#else
  EXPECT_EQ(run([&](KernelContext& c) { portable::softmax_out(c, x.t, 1, false, out.t); }), Error::Ok);
  EXPECT_EQ(run([&](KernelContext& c) { portable::log_softmax_out(c, x.t, -1, false, out.t); }), Error::Ok);
#endif
}

// The quantized convolution's stride, padding and dilation entered its output size arithmetic unchecked: 2 * padding
// or dilation * (kernel - 1) overflowed int64.
TEST(Quantized, ConvolutionGeometryBeyondInt32IsRefused) {
  I8 x(ScalarType::Char, {1, 1, 3, 3}), w(ScalarType::Char, {1, 1, 3, 3}), out(ScalarType::Char, {1, 1, 1, 1});
  F32 scales(ScalarType::Float, {1}, {0.5f});
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, huge[2] = {int64_t{1} << 62, int64_t{1} << 62};
  for (int which = 0; which < 3; ++which) {
    EXPECT_EQ(run([&](KernelContext& c) {
                quantized::conv2d_out(c, x.t, 0.1, 0, w.t, scales.t, nullptr,
                                      ArrayRef<int64_t>(which == 0 ? huge : one),
                                      ArrayRef<int64_t>(which == 1 ? huge : zero),
                                      ArrayRef<int64_t>(which == 2 ? huge : one), 1, 0.1, 0, -128, 127, out.t);
              }),
              Error::InvalidArgument);
    EXPECT_NE(log().find("must be in [1, 2^31)"), std::string::npos) << log();
  }
}

// avg_pool2d wrote self's dtype into out without checking out's: a Half input overran a Byte out.
TEST(Portable, AvgPoolRefusesAnOutOfAnotherDtype) {
  Owned<uint16_t> x(ScalarType::Half, {1, 1, 2, 2});
  Owned<uint8_t> out(ScalarType::Byte, {1, 1, 1, 1});
  const int64_t two[2] = {2, 2}, zero[2] = {0, 0};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::avg_pool2d_out(c, x.t, ArrayRef<int64_t>(two), ArrayRef<int64_t>(two), ArrayRef<int64_t>(zero),
                                       false, true, Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("avg_pool2d.out: self is Half but out is Byte"), std::string::npos) << log();
}

// The norms read weight, bias and statistics, and wrote their outputs, as the input's dtype without checking
// theirs: a Byte weight under a Double input was read eight bytes per element.
TEST(Portable, NormsRefuseOperandsOfAnotherDtype) {
  Owned<double> x(ScalarType::Double, {1, 4}), o0(ScalarType::Double, {1, 4}), o1(ScalarType::Double, {1, 1}),
      o2(ScalarType::Double, {1, 1});
  Owned<uint8_t> byte_weight(ScalarType::Byte, {4});
  const int64_t four[1] = {4};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_layer_norm_out(c, x.t, ArrayRef<int64_t>(four), &byte_weight.t, nullptr, 1e-5, o0.t,
                                              o1.t, o2.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("must be Double like the input"), std::string::npos) << log();
  F32 float_out(ScalarType::Float, {1, 4});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_layer_norm_out(c, x.t, ArrayRef<int64_t>(four), nullptr, nullptr, 1e-5, float_out.t,
                                              o1.t, o2.t);
            }),
            Error::InvalidArgument);

  F32 in(ScalarType::Float, {1, 2, 1, 1}), var(ScalarType::Float, {2}, {1, 1}), b0(ScalarType::Float, {1, 2, 1, 1}),
      b1(ScalarType::Float, {0}), b2(ScalarType::Float, {0});
  Owned<uint8_t> byte_mean(ScalarType::Byte, {2});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_batch_norm_legit_no_training_out(c, in.t, nullptr, nullptr, byte_mean.t, var.t, 0.1,
                                                                1e-5, b0.t, b1.t, b2.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("must be Float like the input"), std::string::npos) << log();
}

#ifdef EMBER_TEST_OPTIMIZED
// The optimized Float clamps and fused convolution agree with portable's on NaN bounds.
TEST(Optimized, NanClampBounds) {
  F32 x(ScalarType::Float, {3}, {-2.0f, 0.5f, 3.0f}), out(ScalarType::Float, {3});
  ASSERT_EQ(run([&](KernelContext& c) {
              optimized::clamp_out(c, x.t, Optional<Scalar>(), Optional<Scalar>(Scalar(NAN)), out.t);
            }),
            Error::Ok);
  for (float v : out.data) EXPECT_TRUE(isnan(v));
  ASSERT_EQ(run([&](KernelContext& c) { optimized::hardtanh_out(c, x.t, Scalar(NAN), Scalar(6.0), out.t); }),
            Error::Ok);
  for (float v : out.data) EXPECT_TRUE(isnan(v));
  F32 in(ScalarType::Float, {1, 1, 2, 2}), w(ScalarType::Float, {1, 1, 1, 1}, {1.0f});
  F32 o(ScalarType::Float, {1, 1, 2, 2});
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  EXPECT_EQ(run([&](KernelContext& c) {
              optimized::convolution_clamp_out(c, in.t, w.t, nullptr, ArrayRef<int64_t>(one), ArrayRef<int64_t>(zero),
                                               ArrayRef<int64_t>(one), false, ArrayRef<int64_t>(zero), 1, 0.0, NAN,
                                               o.t);
            }),
            Error::InvalidArgument);
  const int64_t huge[2] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(run([&](KernelContext& c) {
              optimized::convolution_out(c, in.t, w.t, nullptr, ArrayRef<int64_t>(one), ArrayRef<int64_t>(huge),
                                         ArrayRef<int64_t>(one), false, ArrayRef<int64_t>(zero), 1, o.t);
            }),
            Error::InvalidArgument);
}
#endif

// --- list outs (op_split.cc): piece sizes that overflow, do not sum up, or do not match out ---------------------

TEST(Portable, SplitPiecesAreChecked) {
  F32 x(ScalarType::Float, {2, 3}, {1, 2, 3, 4, 5, 6});
  F32 a(ScalarType::Float, {2, 1}), b(ScalarType::Float, {2, 2});
  Tensor pieces[2] = {a.t, b.t};
  const int64_t sizes[2] = {1, 2};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::split_with_sizes_copy_out(c, x.t, ArrayRef<int64_t>(sizes, 2), 1, TensorList(pieces, 2));
            }),
            Error::Ok);
  EXPECT_EQ(a.data, (std::vector<float>{1, 4}));
  EXPECT_EQ(b.data, (std::vector<float>{2, 3, 5, 6}));
  for (const auto& bad : std::vector<std::vector<int64_t>>{{1, 1}, {-1, 4}, {INT64_MAX, INT64_MIN + 3}, {2, 2}}) {
    EXPECT_EQ(run([&](KernelContext& c) {
                portable::split_with_sizes_copy_out(c, x.t, ArrayRef<int64_t>(bad.data(), 2), 1, TensorList(pieces, 2));
              }),
              Error::InvalidArgument);
  }
  // A split size beyond the dim is one piece (ATen), never an overflowing piece count.
  F32 whole(ScalarType::Float, {2, 3});
  Tensor one[1] = {whole.t};
  EXPECT_EQ(run([&](KernelContext& c) { portable::split_copy_tensor_out(c, x.t, INT64_MAX, 1, TensorList(one, 1)); }),
            Error::Ok);
  EXPECT_EQ(whole.data, x.data);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    EXPECT_EQ(run([&](KernelContext& c) { portable::split_copy_tensor_out(c, x.t, bad, 1, TensorList(one, 1)); }),
              Error::InvalidArgument);
  }
  EXPECT_EQ(run([&](KernelContext& c) { portable::split_copy_tensor_out(c, x.t, 2, 1, TensorList(one, 1)); }),
            Error::InvalidArgument);
  EXPECT_NE(log().find("2 pieces but out holds 1"), std::string::npos) << log();
  // unbind: out count must be the dim's length; dims out of range are named.
  F32 r0(ScalarType::Float, {3}), r1(ScalarType::Float, {3});
  Tensor rows[2] = {r0.t, r1.t};
  EXPECT_EQ(run([&](KernelContext& c) { portable::unbind_copy_int_out(c, x.t, 0, TensorList(rows, 2)); }), Error::Ok);
  EXPECT_EQ(r1.data, (std::vector<float>{4, 5, 6}));
  for (int64_t dim : {int64_t{2}, int64_t{-3}, INT64_MIN}) {
    EXPECT_EQ(run([&](KernelContext& c) { portable::unbind_copy_int_out(c, x.t, dim, TensorList(rows, 2)); }),
              Error::InvalidArgument);
  }
  EXPECT_EQ(run([&](KernelContext& c) { portable::unbind_copy_int_out(c, x.t, 1, TensorList(rows, 2)); }),
            Error::InvalidArgument);
}

}  // namespace
}  // namespace ember
