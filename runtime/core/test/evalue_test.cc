#include "runtime/core/evalue.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(EValue, ScalarsAndTags) {
  EValue i(int64_t{7});
  EValue d(2.5);
  EValue b(true);
  EValue none;
  EXPECT_EQ(i.tag(), Tag::Int);
  EXPECT_EQ(i.as_int(), 7);
  EXPECT_EQ(d.as_scalar().to<float>(), 2.5f);
  EXPECT_TRUE(b.as_scalar().is_boolean());
  EXPECT_TRUE(none.is_none());
  EXPECT_FALSE(none.as_optional_int().has_value());
  EXPECT_EQ(i.as_optional_int().value(), 7);
  EXPECT_FALSE(i.as_optional_double().has_value());
  EXPECT_STREQ(tag_name(Tag::OptionalTensorList), "OptionalTensorList");
}

TEST(EValue, ListsAndTensors) {
  EValue ints[3] = {EValue(int64_t{1}), EValue(int64_t{0}), EValue(int64_t{2})};
  EValue* boxed[3] = {&ints[0], &ints[1], &ints[2]};
  int64_t unboxed[3];
  EValue l(BoxedIntList{boxed, unboxed, 3});
  EXPECT_EQ(l.as_int_list()[2], 2);
  EXPECT_TRUE(l.as_optional_int_list().has_value());
  ints[2] = EValue(int64_t{7});  // a prim op rewrote the value: the list sees it
  EXPECT_EQ(l.as_int_list()[2], 7);

  int32_t sizes[1] = {4};
  uint8_t order[1] = {0};
  int32_t strides[1];
  float data[4] = {0, 1, 2, 3};
  Result<TensorImpl> impl = TensorImpl::make(ScalarType::Float, 1, sizes, order, strides, data);
  ASSERT_TRUE(impl.ok());
  EValue t(Tensor(&impl.get()));
  EXPECT_TRUE(t.is_tensor());
  EXPECT_EQ(t.as_tensor().const_data_ptr<float>()[3], 3.0f);
  EXPECT_NE(t.as_optional_tensor(), nullptr);
  EXPECT_EQ(EValue().as_optional_tensor(), nullptr);

  Tensor items[2] = {Tensor(&impl.get()), Tensor(&impl.get())};
  EValue tl(TensorList(items, 2));
  EXPECT_EQ(tl.as_tensor_list().size(), 2u);
  const Tensor* opt[2] = {&items[0], nullptr};
  EValue ol(OptionalTensorList(opt, 2));
  EXPECT_EQ(ol.as_optional_tensor_list()[1], nullptr);
}

}  // namespace
}  // namespace ember
