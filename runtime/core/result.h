// Result<T>: a value or the Error that prevented it. No exceptions: callers test ok() (or use EMBER_TRY_ASSIGN)
// and never read the value of a failed Result: its storage was never constructed, and checking on every access
// would put a branch in every kernel argument read. The class is [[nodiscard]], like Error.
#pragma once

#include <new>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/log.h"

namespace ember {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : error_(Error::Ok), has_value_(true) { new (&value_) T(value); }
  Result(T&& value) : error_(Error::Ok), has_value_(true) { new (&value_) T(std::move(value)); }
  // An Ok error carries no value; it is turned into Internal so that ok() implies a value.
  Result(Error error) : error_(error == Error::Ok ? Error::Internal : error), has_value_(false) {}

  Result(Result&& other) : error_(other.error_), has_value_(other.has_value_) {
    if (has_value_) new (&value_) T(std::move(other.value_));
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (has_value_) value_.~T();
  }

  bool ok() const { return has_value_; }
  Error error() const { return error_; }

  T& get() { return value_; }
  const T& get() const { return value_; }
  T& operator*() { return value_; }
  const T& operator*() const { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }

 private:
  Error error_;
  bool has_value_;
  union {
    T value_;
  };
};

namespace internal {
// What EMBER_TRY propagates: an Error as it is, a Result's error (Ok when it holds a value).
inline Error error_of(Error error) { return error; }
template <typename T>
Error error_of(const Result<T>& result) {
  return result.error();
}
}  // namespace internal

}  // namespace ember

#define EMBER_INTERNAL_CAT2(a, b) a##b
#define EMBER_INTERNAL_CAT(a, b) EMBER_INTERNAL_CAT2(a, b)

// Logs the formatted message and returns Error::code from the enclosing function when `cond` is false.
#define EMBER_CHECK_OR_RETURN_ERROR(cond, code, ...) \
  do {                                               \
    if (!(cond)) {                                   \
      EMBER_LOG(ERROR, __VA_ARGS__);                 \
      return ::ember::Error::code;                   \
    }                                                \
  } while (0)

// Returns the Error of `expr` (an Error, or a Result whose value is not needed) from the enclosing function
// unless it is Ok. The failing callee has already logged why; this adds no message of its own.
#define EMBER_TRY(expr)                                                      \
  do {                                                                       \
    const ::ember::Error ember_try_err_ = ::ember::internal::error_of(expr); \
    if (ember_try_err_ != ::ember::Error::Ok) {                              \
      return ember_try_err_;                                                 \
    }                                                                        \
  } while (0)

// `auto var = value of expr` (a Result), or returns its Error from the enclosing function.
#define EMBER_TRY_ASSIGN(var, expr)                             \
  auto EMBER_INTERNAL_CAT(ember_result_, __LINE__) = (expr);    \
  if (!EMBER_INTERNAL_CAT(ember_result_, __LINE__).ok()) {      \
    return EMBER_INTERNAL_CAT(ember_result_, __LINE__).error(); \
  }                                                             \
  auto var = std::move(EMBER_INTERNAL_CAT(ember_result_, __LINE__).get())
