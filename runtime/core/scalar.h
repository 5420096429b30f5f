// A number argument of either kind (ATen's Scalar): int, double or bool, converted by the kernel to its compute
// type.
#pragma once

#include <stdint.h>

#include "runtime/core/numeric.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Int, Double, Bool };

  constexpr Scalar() : kind_(Kind::Int), i_(0) {}
  constexpr Scalar(int64_t v) : kind_(Kind::Int), i_(v) {}
  constexpr Scalar(double v) : kind_(Kind::Double), d_(v) {}
  constexpr Scalar(bool v) : kind_(Kind::Bool), b_(v) {}

  Kind kind() const { return kind_; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating() const { return kind_ == Kind::Double; }
  bool is_boolean() const { return kind_ == Kind::Bool; }

  template <typename T>
  T to() const {
    switch (kind_) {
      case Kind::Int: return static_cast<T>(i_);
      case Kind::Double: return convert<T>(d_);  // NaN or out of range into an integer type: defined
      case Kind::Bool: return static_cast<T>(b_);
    }
    return T();
  }
  double to_double() const {
    return kind_ == Kind::Double ? d_ : kind_ == Kind::Int ? static_cast<double>(i_) : (b_ ? 1.0 : 0.0);
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
    bool b_;
  };
};

}  // namespace ember
