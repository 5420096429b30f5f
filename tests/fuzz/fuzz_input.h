// Reads a fuzzer's input as a stream of choices. Past the end every read returns zeros, so any input, however
// short, decodes to something and a shorter input is a simpler case of a longer one.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace ember {
namespace fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | static_cast<uint32_t>(u16()) << 16; }
  uint64_t u64() { return static_cast<uint64_t>(u32()) | static_cast<uint64_t>(u32()) << 32; }
  bool flag() { return (u8() & 1) != 0; }
  // A number in [0, n); n must be > 0.
  uint32_t below(uint32_t n) { return (n <= 256 ? u8() : n <= 65536 ? u16() : u32()) % n; }

  // Copies up to `n` of the remaining bytes into `out` and zero-fills the rest.
  void fill(void* out, size_t n) {
    const size_t take = n < remaining() ? n : remaining();
    memcpy(out, data_ + pos_, take);
    memset(static_cast<uint8_t*>(out) + take, 0, n - take);
    pos_ += take;
  }

  size_t remaining() const { return size_ - pos_; }
  const uint8_t* rest() const { return data_ + pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Values that sit on the edges integer code gets wrong (sizes, indices, strides, dims): small ones mostly, the
// extremes of each width sometimes, or any 64-bit number.
inline int64_t edgy_int(FuzzInput& in) {
  static constexpr int64_t kEdges[] = {
      0,
      1,
      -1,
      2,
      3,
      4,
      -2,
      8,
      16,
      255,
      256,
      65535,
      65536,
      INT32_MAX,
      INT32_MIN,
      static_cast<int64_t>(UINT32_MAX),
      INT64_MAX,
      INT64_MIN,
      INT64_MAX - 1,
      INT64_MIN + 1,
  };
  const uint8_t b = in.u8();
  if (b < 128) return static_cast<int64_t>(b % 8) - 2;  // -2..5: the common case, dims and small sizes
  if (b < 240) return kEdges[b % (sizeof(kEdges) / sizeof(kEdges[0]))];
  return static_cast<int64_t>(in.u64());
}

// Doubles likewise: ordinary ones, then zeros, infinities, NaN, denormals, the int64 range's edges.
inline double edgy_double(FuzzInput& in) {
  static constexpr double kEdges[] = {
      0.0,
      -0.0,
      1.0,
      -1.0,
      0.5,
      2.0,
      1e-7,
      1e30,
      -1e30,
      1e300,
      9.2233720368547758e18,
      -9.2233720368547758e18,
      __builtin_inf(),
      -__builtin_inf(),
      __builtin_nan(""),
      4.9e-324,
      2147483648.0,
      -2147483649.0,
  };
  const uint8_t b = in.u8();
  if (b < 96) return static_cast<double>(static_cast<int>(b % 16) - 8) * 0.25;
  if (b < 224) return kEdges[b % (sizeof(kEdges) / sizeof(kEdges[0]))];
  double d;
  const uint64_t bits = in.u64();
  memcpy(&d, &bits, sizeof(d));
  return d;
}

}  // namespace fuzz
}  // namespace ember
