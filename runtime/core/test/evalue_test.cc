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

TEST(EValue, EachValueAnswersExactlyItsOwnPredicate) {
  EValue inner(int64_t{1});
  EValue* boxed[1] = {&inner};
  int64_t unboxed[1];
  const double doubles[1] = {1.0};
  const bool bools[1] = {true};
  const EValue values[] = {EValue(),
                           EValue(int64_t{1}),
                           EValue(1.0),
                           EValue(false),
                           EValue(Tensor()),
                           EValue(StringView{"ab", 2}),
                           EValue(BoxedIntList{boxed, unboxed, 1}),
                           EValue(ArrayRef<double>(doubles)),
                           EValue(ArrayRef<bool>(bools)),
                           EValue(TensorList()),
                           EValue(OptionalTensorList())};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
    const EValue& v = values[i];
    EXPECT_EQ(static_cast<size_t>(v.tag()), i);  // constructed in tag order
    const bool answers[] = {v.is_none(),
                            v.is_int(),
                            v.is_double(),
                            v.is_bool(),
                            v.is_tensor(),
                            v.is_string(),
                            v.is_int_list(),
                            v.is_double_list(),
                            v.is_bool_list(),
                            v.is_tensor_list(),
                            v.is_optional_tensor_list()};
    for (size_t j = 0; j < sizeof(answers) / sizeof(answers[0]); ++j) {
      EXPECT_EQ(answers[j], i == j) << tag_name(v.tag()) << " asked about " << tag_name(static_cast<Tag>(j));
    }
  }
  EXPECT_EQ(values[5].as_string().size, 2u);
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
