// xorshift64*: the soak's inputs and tokens, the same on every machine for a seed.
#pragma once

#include <stdint.h>

namespace ember {
namespace soak {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ULL + 1) {}
  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1DULL;
  }
  // Uniform in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }
  // Uniform in [-1, 1).
  float unit() { return static_cast<float>(next() >> 40) / static_cast<float>(1 << 23) - 1.0f; }

 private:
  uint64_t state_;
};

}  // namespace soak
}  // namespace ember
