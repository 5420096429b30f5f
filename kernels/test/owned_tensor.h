// What the kernel gtests build their calls from: a tensor that owns its shape arrays and data, and a runner that
// calls a kernel with a fresh context and keeps the logged message for the test to check.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/tensor.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace testing {

// `values` fill the first elements (zeros after them); `order` is the dim order (contiguous when empty);
// `capacity` > 0 makes the tensor bounded-dynamic with room for that many elements.
template <typename T>
struct Owned {
  std::vector<int32_t> sizes, strides;
  std::vector<uint8_t> dim_order;
  std::vector<T> data;
  std::unique_ptr<TensorImpl> impl;
  Tensor t;

  Owned(ScalarType type, std::vector<int32_t> s, std::vector<T> values = {}, std::vector<uint8_t> order = {},
        size_t capacity = 0)
      : sizes(std::move(s)), strides(sizes.size()), dim_order(std::move(order)), data(std::move(values)) {
    int64_t n = 1;
    for (int32_t v : sizes) n *= v;
    if (data.size() < static_cast<size_t>(n)) data.resize(static_cast<size_t>(n), T(0));
    if (capacity > data.size()) data.resize(capacity, T(0));
    if (dim_order.empty()) {
      for (size_t i = 0; i < sizes.size(); ++i) dim_order.push_back(static_cast<uint8_t>(i));
    }
    Result<TensorImpl> r =
        TensorImpl::make(type, static_cast<int32_t>(sizes.size()), sizes.data(), dim_order.data(), strides.data(),
                         data.data(), capacity ? ShapeDynamism::DynamicBound : ShapeDynamism::Static);
    EXPECT_TRUE(r.ok());
    impl.reset(new TensorImpl(std::move(r.get())));
    if (capacity) impl->set_capacity(capacity * sizeof(T));
    t = Tensor(impl.get());
  }

  // Element at logical coordinates, through the strides.
  T at(std::vector<int64_t> c) const {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * strides[d];
    return data[static_cast<size_t>(off)];
  }
};

// Test values from a linear congruential generator: the same floats on every platform and standard library.
struct Lcg {
  uint32_t state;
  float uniform(float lo, float hi) {
    state = state * 1664525u + 1013904223u;
    return lo + (hi - lo) * static_cast<float>(state >> 8) / 16777216.0f;
  }
  std::vector<float> floats(size_t n, float lo = -2.0f, float hi = 2.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }
};

// Runs `call` with a fresh context (and `scratch`, for kernels that plan some); returns the kernel's error.
template <typename Call>
Error run(Call call, Span<uint8_t> scratch = {}) {
  clear_log();
  KernelContext ctx(nullptr, scratch);
  call(ctx);
  return ctx.failure();
}

inline bool logged(const char* text) { return last_log().find(text) != std::string::npos; }

}  // namespace testing
}  // namespace ember
