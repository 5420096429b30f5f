#include "runtime/core/tensor.h"

#include <gtest/gtest.h>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

TEST(Tensor, ContiguousStridesAndBytes) {
  int32_t sizes[3] = {2, 3, 4};
  uint8_t order[3] = {0, 1, 2};
  int32_t strides[3];
  float data[24];
  Result<TensorImpl> impl = TensorImpl::make(ScalarType::Float, 3, sizes, order, strides, data);
  ASSERT_TRUE(impl.ok());
  Tensor t(&impl.get());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(t.strides()[0], 12);
  EXPECT_EQ(t.strides()[1], 4);
  EXPECT_EQ(t.strides()[2], 1);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.const_data_ptr<float>(), data);
}

TEST(Tensor, ChannelsLastStrides) {
  int32_t sizes[4] = {1, 3, 5, 7};  // N, C, H, W
  uint8_t order[4] = {0, 2, 3, 1};  // memory: N, H, W, C
  int32_t strides[4];
  Result<TensorImpl> impl = TensorImpl::make(ScalarType::Float, 4, sizes, order, strides, nullptr);
  ASSERT_TRUE(impl.ok());
  EXPECT_EQ(strides[1], 1);      // C is innermost
  EXPECT_EQ(strides[3], 3);      // W
  EXPECT_EQ(strides[2], 21);     // H
  EXPECT_EQ(strides[0], 105);    // N
  EXPECT_FALSE(impl->is_contiguous());
}

TEST(Tensor, RejectsBadShapes) {
  int32_t strides[2];
  uint8_t order[2] = {0, 1};
  int32_t negative[2] = {2, -1};
  EXPECT_EQ(TensorImpl::make(ScalarType::Float, 2, negative, order, strides, nullptr).error(), Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("negative"), std::string::npos);
  // More than 2^31 - 1 elements: refused, naming the dimension where the count passes it.
  int32_t huge4[4] = {0x7fffffff, 0x7fffffff, 0x7fffffff, 4};
  uint8_t order4[4] = {0, 1, 2, 3};
  int32_t strides4[4];
  EXPECT_EQ(TensorImpl::make(ScalarType::Double, 4, huge4, order4, strides4, nullptr).error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "element count overflows 2^31-1 at dimension 1 (size 2147483647)");
  const int32_t largest[2] = {0x7fffffff, 1};
  EXPECT_EQ(*checked_numel(ArrayRef<int32_t>(largest)), int64_t{0x7fffffff});
  // An empty tensor's other dims count too: kernels walk its (empty) slices, billions of them otherwise.
  const int32_t empty_but_vast[3] = {0, 65536, 65536};
  EXPECT_EQ(checked_numel(ArrayRef<int32_t>(empty_but_vast)).error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "element count overflows 2^31-1 at dimension 2 (size 65536)");
  const int32_t empty[3] = {46340, 0, 46340};
  EXPECT_EQ(*checked_numel(ArrayRef<int32_t>(empty)), 0);
  // 2^31 - 1 elements of 8 bytes fit a 64-bit size_t; a 32-bit target's would overflow, and says so.
  EXPECT_EQ(checked_nbytes(ScalarType::Double, ArrayRef<int32_t>(largest)).ok(), sizeof(size_t) == 8);
  uint8_t not_permutation[2] = {0, 0};
  int32_t sizes[2] = {2, 2};
  EXPECT_EQ(TensorImpl::make(ScalarType::Float, 2, sizes, not_permutation, strides, nullptr).error(),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("not a permutation"), std::string::npos);
  EXPECT_EQ(TensorImpl::make(ScalarType::ComplexFloat, 2, sizes, order, strides, nullptr).error(), Error::InvalidType);
}

TEST(Tensor, ResizeRules) {
  int32_t sizes[2] = {2, 4};
  uint8_t order[2] = {0, 1};
  int32_t strides[2];
  Result<TensorImpl> fixed = TensorImpl::make(ScalarType::Float, 2, sizes, order, strides, nullptr);
  ASSERT_TRUE(fixed.ok());
  const int32_t same[2] = {2, 4};
  const int32_t other[2] = {4, 2};
  const int32_t rank3[3] = {1, 2, 4};
  EXPECT_EQ(fixed->resize(ArrayRef<int32_t>(same)), Error::Ok);
  EXPECT_EQ(fixed->resize(ArrayRef<int32_t>(other)), Error::NotSupported);
  EXPECT_EQ(testing::last_log(), "static tensor: dimension 0 is 2 and cannot become 4");
  EXPECT_EQ(fixed->resize(ArrayRef<int32_t>(rank3)), Error::NotSupported);

  int32_t bsizes[2] = {2, 4};
  Result<TensorImpl> bounded =
      TensorImpl::make(ScalarType::Float, 2, bsizes, order, strides, nullptr, ShapeDynamism::DynamicBound);
  ASSERT_TRUE(bounded.ok());
  const int32_t smaller[2] = {1, 3};
  const int32_t larger[2] = {3, 4};
  EXPECT_EQ(bounded->resize(ArrayRef<int32_t>(smaller)), Error::Ok);
  EXPECT_EQ(bounded->numel(), 3);
  EXPECT_EQ(strides[0], 3);
  EXPECT_EQ(bounded->resize(ArrayRef<int32_t>(larger)), Error::NotSupported);
  EXPECT_EQ(testing::last_log(), "resizing a bounded tensor to 48 bytes exceeds its capacity of 32 bytes");
  EXPECT_EQ(bounded->numel(), 3);  // a refused resize leaves the shape as it was
  const int32_t negative[2] = {-1, 4};
  EXPECT_EQ(bounded->resize(ArrayRef<int32_t>(negative)), Error::InvalidArgument);
  const int32_t grow_back[2] = {2, 4};
  EXPECT_EQ(bounded->resize(ArrayRef<int32_t>(grow_back)), Error::Ok);  // back up to the capacity is allowed
  EXPECT_EQ(strides[0], 4);

  // Unbounded tensors resize as bounded ones (ExecuTorch's rule too: there is no allocator to grow into).
  int32_t usizes[1] = {8};
  uint8_t uorder[1] = {0};
  int32_t ustrides[1];
  Result<TensorImpl> unbounded =
      TensorImpl::make(ScalarType::Half, 1, usizes, uorder, ustrides, nullptr, ShapeDynamism::DynamicUnbound);
  ASSERT_TRUE(unbounded.ok());
  EXPECT_EQ(unbounded->capacity(), 16u);
  const int32_t nine[1] = {9};
  EXPECT_EQ(unbounded->resize(ArrayRef<int32_t>(nine)), Error::NotSupported);
}

}  // namespace
}  // namespace ember
