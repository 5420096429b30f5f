// The shape and indexing kernels (op_shape.cc, op_indexing.cc) where no exported program reaches them: index_put_
// (exir functionalizes it), et_copy's host/device copies and _empty_dim_order (never emitted), view_as_real_copy
// (no complex tensors in Ember), nonzero / masked_select / repeat_interleave.Tensor (exir refuses their
// data-dependent shapes; here with bounded outputs), a non-default dim order, and hostile arguments: each a named
// kernel error, never an access out of bounds (the sanitizer configs run this file too).
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
using I32 = Owned<int32_t>;
using B = Owned<uint8_t>;  // Bool tensors (std::vector<bool> has no data())

std::vector<float> iota(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

// --- index_put_ (in place) -------------------------------------------------------------------------------------

TEST(IndexPutInPlace, AccumulateSumsDuplicatesAndNegativeIndicesWrap) {
  F32 self(ScalarType::Float, {3, 2}, {1, 2, 3, 4, 5, 6});
  I64 idx(ScalarType::Long, {3}, {0, 0, -1});
  F32 values(ScalarType::Float, {3, 2}, {10, 20, 30, 40, 50, 60});
  const Tensor* indices[] = {&idx.t};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::index_put_(c, self.t, OptionalTensorList(indices, 1), values.t, true);
            }),
            Error::Ok);
  EXPECT_EQ(self.data, (std::vector<float>{41, 62, 3, 4, 55, 66}));
}

TEST(IndexPutInPlace, BoolMaskWritesBroadcastValue) {
  I32 self(ScalarType::Int, {2, 3}, {1, 2, 3, 4, 5, 6});
  B mask(ScalarType::Bool, {2, 3}, {true, false, true, false, false, true});
  I32 values(ScalarType::Int, {1}, {-7});
  const Tensor* indices[] = {&mask.t};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::index_put_(c, self.t, OptionalTensorList(indices, 1), values.t, false);
            }),
            Error::Ok);
  EXPECT_EQ(self.data, (std::vector<int32_t>{-7, 2, -7, 4, 5, -7}));
}

TEST(IndexPutInPlace, RefusesOutOfRangeMixedMaskAndDtypeMismatch) {
  F32 self(ScalarType::Float, {3, 2});
  F32 values(ScalarType::Float, {2});
  I64 far(ScalarType::Long, {1}, {3});
  const Tensor* a[] = {&far.t};
  EXPECT_EQ(run([&](KernelContext& c) { portable::index_put_(c, self.t, OptionalTensorList(a, 1), values.t, false); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("index 3 at position 0"));
  I64 neg(ScalarType::Long, {1}, {-4});
  const Tensor* b[] = {&neg.t};
  EXPECT_EQ(run([&](KernelContext& c) { portable::index_put_(c, self.t, OptionalTensorList(b, 1), values.t, false); }),
            Error::InvalidArgument);
  B mask(ScalarType::Bool, {3}, {true, false, true});
  I64 zero(ScalarType::Long, {1}, {0});
  const Tensor* mixed[] = {&mask.t, &zero.t};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::index_put_(c, self.t, OptionalTensorList(mixed, 2), values.t, false);
            }),
            Error::NotSupported);
  I32 ivalues(ScalarType::Int, {2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::index_put_(c, self.t, OptionalTensorList(b, 1), ivalues.t, false); }),
            Error::InvalidArgument);
  B short_mask(ScalarType::Bool, {2}, {true, true});
  const Tensor* m2[] = {&short_mask.t};
  EXPECT_EQ(run([&](KernelContext& c) { portable::index_put_(c, self.t, OptionalTensorList(m2, 1), values.t, false); }),
            Error::InvalidArgument);
}

// --- et_copy, _empty_dim_order, view_as_real -----------------------------------------------------------------

TEST(HostDeviceCopy, CopiesAndRefusesMismatch) {
  F32 x(ScalarType::Float, {2, 3}, iota(6));
  F32 out(ScalarType::Float, {2, 3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::h2d_copy_out(c, x.t, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, x.data);
  F32 back(ScalarType::Float, {2, 3});
  ASSERT_EQ(run([&](KernelContext& c) { portable::d2h_copy_out(c, out.t, back.t); }), Error::Ok);
  EXPECT_EQ(back.data, x.data);
  I32 wrong_type(ScalarType::Int, {2, 3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::h2d_copy_out(c, x.t, wrong_type.t); }), Error::InvalidArgument);
  F32 wrong_shape(ScalarType::Float, {3, 2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::d2h_copy_out(c, x.t, wrong_shape.t); }), Error::InvalidArgument);
}

TEST(EmptyDimOrder, ResizesBoundedOutAndChecksDimOrder) {
  F32 out(ScalarType::Float, {4, 4}, {}, {}, 16);
  const int64_t size[] = {2, 3};
  const int64_t order[] = {0, 1};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::empty_dim_order_out(c, ArrayRef<int64_t>(size, 2),
                                            Optional<ArrayRef<int64_t>>(ArrayRef<int64_t>(order, 2)), out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.t.size(0), 2);
  EXPECT_EQ(out.t.size(1), 3);
  const int64_t swapped[] = {1, 0};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::empty_dim_order_out(c, ArrayRef<int64_t>(size, 2),
                                            Optional<ArrayRef<int64_t>>(ArrayRef<int64_t>(swapped, 2)), out.t);
            }),
            Error::InvalidArgument);
  const int64_t big[] = {5, 5};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::empty_dim_order_out(c, ArrayRef<int64_t>(big, 2), Optional<ArrayRef<int64_t>>(), out.t);
            }),
            Error::InvalidArgument);
}

TEST(ViewAsReal, ComplexTensorsCannotExistSoRealInputIsRefused) {
  // Ember's format and runtime have no complex storage: a complex tensor cannot be made at all...
  int32_t sizes[1] = {2}, strides[1];
  uint8_t order[1] = {0};
  float data[4] = {0};
  EXPECT_FALSE(TensorImpl::make(ScalarType::ComplexFloat, 1, sizes, order, strides, data).ok());
  // ...and any other input is refused by name.
  F32 x(ScalarType::Float, {2});
  F32 out(ScalarType::Float, {2, 2});
  EXPECT_EQ(run([&](KernelContext& c) { portable::view_as_real_copy_out(c, x.t, out.t); }), Error::InvalidArgument);
  EXPECT_TRUE(logged("not a complex dtype"));
}

// --- data-dependent sizes: bounded outputs ------------------------------------------------------------------

TEST(Nonzero, FillsBoundedOutAndRefusesTooSmall) {
  F32 x(ScalarType::Float, {2, 3}, {0, 1.5f, -0.0f, 2, 0, NAN});
  I64 out(ScalarType::Long, {6, 2}, {}, {}, 12);
  ASSERT_EQ(run([&](KernelContext& c) { portable::nonzero_out(c, x.t, out.t); }), Error::Ok);
  ASSERT_EQ(out.t.size(0), 3);  // -0.0 is zero, NaN is not
  EXPECT_EQ(std::vector<int64_t>(out.data.begin(), out.data.begin() + 6), (std::vector<int64_t>{0, 1, 1, 0, 1, 2}));
  I64 small(ScalarType::Long, {2, 2}, {}, {}, 4);
  EXPECT_EQ(run([&](KernelContext& c) { portable::nonzero_out(c, x.t, small.t); }), Error::InvalidArgument);
  EXPECT_TRUE(logged("the result has 6 elements (48 bytes)"));
  EXPECT_TRUE(logged("at most 32 bytes"));
  I32 wrong(ScalarType::Int, {6, 2}, {}, {}, 12);
  EXPECT_EQ(run([&](KernelContext& c) { portable::nonzero_out(c, x.t, wrong.t); }), Error::InvalidArgument);
}

TEST(MaskedSelect, BroadcastsFillsBoundedOutAndRefusesTooSmall) {
  F32 x(ScalarType::Float, {3}, {1, 2, 3});
  B mask(ScalarType::Bool, {2, 3}, {true, false, true, false, true, true});
  F32 out(ScalarType::Float, {6}, {}, {}, 6);
  ASSERT_EQ(run([&](KernelContext& c) { portable::masked_select_out(c, x.t, mask.t, out.t); }), Error::Ok);
  ASSERT_EQ(out.t.size(0), 4);
  EXPECT_EQ(std::vector<float>(out.data.begin(), out.data.begin() + 4), (std::vector<float>{1, 3, 2, 3}));
  F32 small(ScalarType::Float, {3}, {}, {}, 3);
  EXPECT_EQ(run([&](KernelContext& c) { portable::masked_select_out(c, x.t, mask.t, small.t); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("the result has 4 elements"));
  F32 not_bool(ScalarType::Float, {3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::masked_select_out(c, x.t, not_bool.t, out.t); }),
            Error::InvalidArgument);
}

TEST(RepeatInterleave, ExpandsAndChecksRepeats) {
  I64 r(ScalarType::Long, {3}, {2, 0, 3});
  I64 out(ScalarType::Long, {8}, {}, {}, 8);
  ASSERT_EQ(run([&](KernelContext& c) { portable::repeat_interleave_tensor_out(c, r.t, Optional<int64_t>(), out.t); }),
            Error::Ok);
  ASSERT_EQ(out.t.size(0), 5);
  EXPECT_EQ(std::vector<int64_t>(out.data.begin(), out.data.begin() + 5), (std::vector<int64_t>{0, 0, 2, 2, 2}));
  I32 r32(ScalarType::Int, {2}, {1, 2});
  I32 out32(ScalarType::Int, {3});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::repeat_interleave_tensor_out(c, r32.t, Optional<int64_t>(int64_t{3}), out32.t);
            }),
            Error::Ok);
  EXPECT_EQ(out32.data, (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::repeat_interleave_tensor_out(c, r32.t, Optional<int64_t>(int64_t{4}), out32.t);
            }),
            Error::InvalidArgument);
  I64 neg(ScalarType::Long, {2}, {1, -1});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::repeat_interleave_tensor_out(c, neg.t, Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  I64 huge(ScalarType::Long, {2}, {INT64_MAX, INT64_MAX});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::repeat_interleave_tensor_out(c, huge.t, Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  I64 small(ScalarType::Long, {2}, {}, {}, 2);
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::repeat_interleave_tensor_out(c, r.t, Optional<int64_t>(), small.t);
            }),
            Error::InvalidArgument);
}

// --- a non-default dim order: read and written through strides ------------------------------------------------

TEST(DimOrder, ChannelsLastInputAndOutputKeepLogicalValues) {
  // NHWC memory for a [1, 2, 2, 3] tensor; element (0, c, h, w) = 100c + 10h + w.
  std::vector<float> v(12);
  F32 x(ScalarType::Float, {1, 2, 2, 3}, v, {0, 2, 3, 1});
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w)
        x.data[static_cast<size_t>(h * x.strides[2] + w * x.strides[3] + c * x.strides[1])] =
            static_cast<float>(100 * c + 10 * h + w);
  F32 out(ScalarType::Float, {1, 2, 2, 3}, {}, {0, 2, 3, 1});
  const int64_t dims[] = {1, 3};
  ASSERT_EQ(run([&](KernelContext& c) { portable::flip_out(c, x.t, ArrayRef<int64_t>(dims, 2), out.t); }), Error::Ok);
  EXPECT_EQ(out.at({0, 0, 1, 0}), 112.0f);
  EXPECT_EQ(out.at({0, 1, 0, 2}), 0.0f);
  F32 plain(ScalarType::Float, {1, 3, 2, 2});
  ASSERT_EQ(run([&](KernelContext& c) { portable::transpose_copy_int_out(c, x.t, 1, 3, plain.t); }), Error::Ok);
  EXPECT_EQ(plain.at({0, 2, 1, 1}), 112.0f);
  EXPECT_EQ(plain.at({0, 1, 0, 1}), 101.0f);
}

TEST(DimOrder, CatOfMixedDimOrdersIsRefusedByName) {
  // cat copies in out's memory order; an input in another order would be read wrong, so it is refused.
  F32 a(ScalarType::Float, {1, 2, 2, 2}, iota(8), {0, 2, 3, 1});
  F32 b(ScalarType::Float, {1, 2, 2, 2}, iota(8));
  F32 out(ScalarType::Float, {1, 4, 2, 2}, {}, {0, 2, 3, 1});
  Tensor list[2] = {a.t, b.t};
  EXPECT_EQ(run([&](KernelContext& c) { portable::cat_out(c, TensorList(list, 2), 1, out.t); }), Error::NotSupported);
  EXPECT_TRUE(logged("cat.out: tensor 1's dim order differs from out's")) << testing::last_log();
  list[1] = a.t;  // both channels-last: out interleaves each pixel's two runs of C
  ASSERT_EQ(run([&](KernelContext& c) { portable::cat_out(c, TensorList(list, 2), 1, out.t); }), Error::Ok);
  EXPECT_EQ(out.at({0, 2, 1, 0}), a.at({0, 0, 1, 0}));
  EXPECT_EQ(out.at({0, 1, 0, 1}), a.at({0, 1, 0, 1}));
}

// --- hostile arguments ---------------------------------------------------------------------------------------

TEST(Hostile, AsStridedExtentAndOverflow) {
  F32 x(ScalarType::Float, {6}, iota(6));
  F32 out(ScalarType::Float, {2, 2});
  const int64_t size[] = {2, 2};
  const int64_t beyond[] = {3, 3};  // reaches element 6 of 6
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::as_strided_copy_out(c, x.t, ArrayRef<int64_t>(size, 2), ArrayRef<int64_t>(beyond, 2),
                                            Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("reaches element 6, self has 6"));
  const int64_t huge[] = {INT64_MAX, 1};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::as_strided_copy_out(c, x.t, ArrayRef<int64_t>(size, 2), ArrayRef<int64_t>(huge, 2),
                                            Optional<int64_t>(), out.t);
            }),
            Error::InvalidArgument);
  const int64_t ok[] = {2, 1};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::as_strided_copy_out(c, x.t, ArrayRef<int64_t>(size, 2), ArrayRef<int64_t>(ok, 2),
                                            Optional<int64_t>(INT64_MAX), out.t);
            }),
            Error::InvalidArgument);
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::as_strided_copy_out(c, x.t, ArrayRef<int64_t>(size, 2), ArrayRef<int64_t>(ok, 2),
                                            Optional<int64_t>(int64_t{1}), out.t);
            }),
            Error::Ok);
  EXPECT_EQ(out.data, (std::vector<float>{1, 2, 3, 4}));
}

TEST(Hostile, ShapeArgumentsAreNamedErrors) {
  F32 x(ScalarType::Float, {2, 3}, iota(6));
  F32 out(ScalarType::Float, {2, 3});
  const int64_t huge_repeat[] = {INT64_MAX, 2};
  EXPECT_EQ(run([&](KernelContext& c) { portable::repeat_out(c, x.t, ArrayRef<int64_t>(huge_repeat, 2), out.t); }),
            Error::InvalidArgument);
  const int64_t few[] = {2};
  EXPECT_EQ(run([&](KernelContext& c) { portable::repeat_out(c, x.t, ArrayRef<int64_t>(few, 1), out.t); }),
            Error::InvalidArgument);
  F32 u(ScalarType::Float, {2, 1, 4});
  EXPECT_EQ(run([&](KernelContext& c) { portable::unfold_copy_out(c, x.t, 1, 4, 1, u.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::unfold_copy_out(c, x.t, 1, 2, 0, u.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::narrow_copy_out(c, x.t, 1, 2, 2, out.t); }), Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::narrow_copy_out(c, x.t, 1, INT64_MIN, 1, out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::diagonal_copy_out(c, x.t, 0, 1, -1, out.t); }),
            Error::InvalidArgument);
  F32 d(ScalarType::Float, {0});
  EXPECT_EQ(run([&](KernelContext& c) { portable::diagonal_copy_out(c, x.t, INT64_MIN, 0, 1, d.t); }), Error::Ok);
  const int64_t shifts[] = {1, 2};
  const int64_t dims[] = {0};
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::roll_out(c, x.t, ArrayRef<int64_t>(shifts, 2), ArrayRef<int64_t>(dims, 1), out.t);
            }),
            Error::InvalidArgument);
  const int64_t big_shift[] = {INT64_MIN};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::roll_out(c, x.t, ArrayRef<int64_t>(big_shift, 1), ArrayRef<int64_t>(dims, 1), out.t);
            }),
            Error::Ok);
  const int64_t dup[] = {1, -1};
  EXPECT_EQ(run([&](KernelContext& c) { portable::flip_out(c, x.t, ArrayRef<int64_t>(dup, 2), out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::transpose_copy_int_out(c, x.t, 0, 2, out.t); }),
            Error::InvalidArgument);
  F32 t3(ScalarType::Float, {1, 2, 3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::t_copy_out(c, t3.t, out.t); }), Error::InvalidArgument);
  F32 v1(ScalarType::Float, {3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::tril_out(c, v1.t, 0, v1.t); }), Error::InvalidArgument);
  ASSERT_EQ(run([&](KernelContext& c) { portable::tril_out(c, x.t, INT64_MIN, out.t); }), Error::Ok);
  EXPECT_EQ(out.data, std::vector<float>(6, 0.0f));
  F32 y(ScalarType::Float, {3, 2});
  Tensor pair[] = {x.t, y.t};
  F32 st(ScalarType::Float, {2, 2, 3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::stack_out(c, TensorList(pair, 2), 0, st.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::squeeze_copy_dim_out(c, x.t, 2, out.t); }), Error::InvalidArgument);
}

TEST(Hostile, IndexValuesAreCheckedBeforeUse) {
  F32 x(ScalarType::Float, {2, 3}, iota(6));
  F32 out(ScalarType::Float, {2, 3});
  I64 idx(ScalarType::Long, {2, 1}, {1, INT64_MIN});
  F32 g(ScalarType::Float, {2, 1});
  EXPECT_EQ(run([&](KernelContext& c) { portable::gather_out(c, x.t, 1, idx.t, false, g.t); }), Error::InvalidArgument);
  EXPECT_TRUE(logged("out of bounds for dim 1 of size 3"));
  F32 src(ScalarType::Float, {2, 1});
  EXPECT_EQ(run([&](KernelContext& c) { portable::scatter_src_out(c, x.t, 1, idx.t, src.t, out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::scatter_value_out(c, x.t, 1, idx.t, Scalar(1.0), out.t); }),
            Error::InvalidArgument);
  EXPECT_EQ(run([&](KernelContext& c) { portable::scatter_add_out(c, x.t, 1, idx.t, src.t, out.t); }),
            Error::InvalidArgument);
  I64 wide(ScalarType::Long, {3, 1}, {0, 0, 0});  // larger than self in a dim other than `dim`
  EXPECT_EQ(run([&](KernelContext& c) { portable::gather_out(c, x.t, 1, wide.t, false, g.t); }),
            Error::InvalidArgument);
  I64 sel(ScalarType::Long, {1}, {INT64_MAX});
  F32 s1(ScalarType::Float, {2, 1});
  EXPECT_EQ(run([&](KernelContext& c) { portable::index_select_out(c, x.t, 1, sel.t, s1.t); }), Error::InvalidArgument);
  F32 row(ScalarType::Float, {3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::select_scatter_out(c, x.t, row.t, 0, INT64_MIN, out.t); }),
            Error::InvalidArgument);
  F32 sl(ScalarType::Float, {2, 1});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::slice_scatter_out(c, x.t, sl.t, 1, Optional<int64_t>(INT64_MIN), Optional<int64_t>(INT64_MAX),
                                          INT64_MAX, out.t);
            }),
            Error::Ok);
  // An empty dim with a huge step (kernel_fuzz found slice_copy multiplying the step into the stride there).
  F32 empty(ScalarType::Float, {3, 0});
  F32 empty_out(ScalarType::Float, {3, 0});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::slice_copy_out(c, empty.t, 1, Optional<int64_t>(), Optional<int64_t>(), INT64_MAX / 3,
                                       empty_out.t);
            }),
            Error::Ok);
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::slice_scatter_out(c, empty.t, empty_out.t, 1, Optional<int64_t>(), Optional<int64_t>(),
                                          INT64_MAX / 3, empty_out.t);
            }),
            Error::Ok);
  B mask(ScalarType::Bool, {2, 3}, {true, true, true, true, true, true});
  F32 few(ScalarType::Float, {5});
  EXPECT_EQ(run([&](KernelContext& c) { portable::masked_scatter_out(c, x.t, mask.t, few.t, out.t); }),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("mask has 6 true elements, source only 5"));
}

}  // namespace
}  // namespace ember
