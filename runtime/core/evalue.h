// EValue: one entry of a method's value table: a tensor, a scalar, a list, a string or None.
//
// Lists are views into arrays the method allocated at load. An int list is boxed, as in the .pte: it points at
// its Int values and re-reads them each time a kernel asks (into an int64_t array beside it), because prim ops
// such as sym_size may rewrite those values at run time in programs with symbolic shapes. A tensor list is an
// array of Tensor handles, an optional-tensor list an array of Tensor pointers (null for None).
//
// The as_*() accessors do not check the tag: Method::load checks every kernel argument's tag against the
// kernel's signature once, so the hot path reads values without branches. Use tag()/is_*() elsewhere.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/optional.h"
#include "runtime/core/scalar.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor.h"

namespace ember {

enum class Tag : uint8_t {
  None = 0,
  Int,
  Double,
  Bool,
  Tensor,
  String,
  IntList,
  DoubleList,
  BoolList,
  TensorList,
  OptionalTensorList,
};

const char* tag_name(Tag tag);

struct StringView {
  const char* data;
  size_t size;
};

class EValue;

// An int list: `items[i]` are Int values; `unboxed` (same length) receives their current numbers on access.
struct BoxedIntList {
  EValue* const* items;
  int64_t* unboxed;
  size_t size;
};

using TensorList = ArrayRef<Tensor>;
using OptionalTensorList = ArrayRef<const Tensor*>;

class EValue {
 public:
  EValue() : tag_(Tag::None) { payload_.i = 0; }
  explicit EValue(int64_t v) : tag_(Tag::Int) { payload_.i = v; }
  explicit EValue(double v) : tag_(Tag::Double) { payload_.d = v; }
  explicit EValue(bool v) : tag_(Tag::Bool) { payload_.b = v; }
  explicit EValue(Tensor t) : tag_(Tag::Tensor) { payload_.t = t; }
  explicit EValue(StringView s) : tag_(Tag::String) { payload_.s = s; }
  explicit EValue(BoxedIntList l) : tag_(Tag::IntList) { payload_.il = l; }
  explicit EValue(ArrayRef<double> l) : tag_(Tag::DoubleList) { payload_.dl = l; }
  explicit EValue(ArrayRef<bool> l) : tag_(Tag::BoolList) { payload_.bl = l; }
  explicit EValue(TensorList l) : tag_(Tag::TensorList) { payload_.tl = l; }
  explicit EValue(OptionalTensorList l) : tag_(Tag::OptionalTensorList) { payload_.ol = l; }

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_int() const { return tag_ == Tag::Int; }
  bool is_double() const { return tag_ == Tag::Double; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_scalar() const { return tag_ == Tag::Int || tag_ == Tag::Double || tag_ == Tag::Bool; }
  bool is_tensor() const { return tag_ == Tag::Tensor; }
  bool is_string() const { return tag_ == Tag::String; }
  bool is_int_list() const { return tag_ == Tag::IntList; }
  bool is_double_list() const { return tag_ == Tag::DoubleList; }
  bool is_bool_list() const { return tag_ == Tag::BoolList; }
  bool is_tensor_list() const { return tag_ == Tag::TensorList; }
  bool is_optional_tensor_list() const { return tag_ == Tag::OptionalTensorList; }

  // Unchecked accessors (see the file comment).
  int64_t as_int() const { return payload_.i; }
  double as_double() const { return payload_.d; }
  bool as_bool() const { return payload_.b; }
  Scalar as_scalar() const {
    return tag_ == Tag::Int ? Scalar(payload_.i) : tag_ == Tag::Double ? Scalar(payload_.d) : Scalar(payload_.b);
  }
  const Tensor& as_tensor() const { return payload_.t; }
  Tensor& as_mutable_tensor() { return payload_.t; }
  StringView as_string() const { return payload_.s; }
  ArrayRef<int64_t> as_int_list() const;
  ArrayRef<double> as_double_list() const { return payload_.dl; }
  ArrayRef<bool> as_bool_list() const { return payload_.bl; }
  TensorList as_tensor_list() const { return payload_.tl; }
  OptionalTensorList as_optional_tensor_list() const { return payload_.ol; }

  const Tensor* as_optional_tensor() const { return tag_ == Tag::Tensor ? &payload_.t : nullptr; }
  Optional<int64_t> as_optional_int() const {
    return tag_ == Tag::Int ? Optional<int64_t>(payload_.i) : Optional<int64_t>();
  }
  Optional<double> as_optional_double() const {
    return tag_ == Tag::Double ? Optional<double>(payload_.d) : Optional<double>();
  }
  Optional<bool> as_optional_bool() const { return tag_ == Tag::Bool ? Optional<bool>(payload_.b) : Optional<bool>(); }
  Optional<StringView> as_optional_string() const {
    return tag_ == Tag::String ? Optional<StringView>(payload_.s) : Optional<StringView>();
  }
  Optional<Scalar> as_optional_scalar() const {
    return is_scalar() ? Optional<Scalar>(as_scalar()) : Optional<Scalar>();
  }
  Optional<ArrayRef<int64_t>> as_optional_int_list() const {
    return tag_ == Tag::IntList ? Optional<ArrayRef<int64_t>>(as_int_list()) : Optional<ArrayRef<int64_t>>();
  }
  Optional<ArrayRef<double>> as_optional_double_list() const {
    return tag_ == Tag::DoubleList ? Optional<ArrayRef<double>>(as_double_list()) : Optional<ArrayRef<double>>();
  }

 private:
  Tag tag_;
  union Payload {
    Payload() : i(0) {}
    int64_t i;
    double d;
    bool b;
    Tensor t;
    StringView s;
    BoxedIntList il;
    ArrayRef<double> dl;
    ArrayRef<bool> bl;
    TensorList tl;
    OptionalTensorList ol;
  } payload_;
};

inline ArrayRef<int64_t> EValue::as_int_list() const {
  for (size_t i = 0; i < payload_.il.size; ++i) payload_.il.unboxed[i] = payload_.il.items[i]->as_int();
  return ArrayRef<int64_t>(payload_.il.unboxed, payload_.il.size);
}

}  // namespace ember
