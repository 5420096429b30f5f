// Views over contiguous memory the view does not own. Span<T> may write, ArrayRef<T> only reads.
#pragma once

#include <stddef.h>

namespace ember {

template <typename T>
class Span {
 public:
  constexpr Span() : data_(nullptr), size_(0) {}
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }

 private:
  T* data_;
  size_t size_;
};

template <typename T>
class ArrayRef {
 public:
  constexpr ArrayRef() : data_(nullptr), size_(0) {}
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  constexpr ArrayRef(const T& single) : data_(&single), size_(1) {}
  template <size_t N>
  constexpr ArrayRef(const T (&array)[N]) : data_(array), size_(N) {}
  constexpr ArrayRef(Span<T> span) : data_(span.data()), size_(span.size()) {}

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& back() const { return data_[size_ - 1]; }

  bool equals(ArrayRef other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i) {
      if (!(data_[i] == other.data_[i])) return false;
    }
    return true;
  }

 private:
  const T* data_;
  size_t size_;
};

}  // namespace ember
