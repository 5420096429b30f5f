// A value or nothing, for kernel arguments such as `int? dim`. Small and freestanding: std::optional's value()
// may throw, which this runtime is compiled without.
#pragma once

namespace ember {

template <typename T>
class Optional {
 public:
  constexpr Optional() : has_(false), value_() {}
  constexpr Optional(const T& value) : has_(true), value_(value) {}

  constexpr bool has_value() const { return has_; }
  constexpr const T& value() const { return value_; }
  constexpr T value_or(const T& fallback) const { return has_ ? value_ : fallback; }

 private:
  bool has_;
  T value_;
};

}  // namespace ember
