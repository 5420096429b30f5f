// The portable library's random numbers (rand, randn, native_dropout): a counter-based generator, so any element
// of any call can be computed on its own and the results do not depend on how a kernel walks its output.
//
// Element i of the k-th random kernel call in a process (k = 0, 1, ... counted across all random kernels) is
// splitmix64's output function applied to key(seed, k) + (i + 1) * 0x9E3779B97F4A7C15, where key(seed, k) is the
// same function of seed + k * 0xD1B54A32D192ED03. The seed is 0x454D424552 ("EMBER") until seed_random() sets
// another; seed_random() also restarts k at 0, so a program run after the same seed gives the same numbers.
// The numbers are not eager PyTorch's (its generators are Philox and MT19937); tests check distributions.
#pragma once

#include <stdint.h>

namespace ember {
namespace portable {

constexpr uint64_t kDefaultRandomSeed = 0x454D424552ull;

// Sets the seed and restarts the call count. Not for use while a random kernel is running on another thread.
void seed_random(uint64_t seed);

// One call's numbers. Taking a stream advances the process's call count (atomically: methods on several threads
// each get their own streams).
class RandomStream {
 public:
  static RandomStream next();
  // 64 random bits for element i.
  uint64_t bits(uint64_t i) const;
  // A uniform double in [0, 1) with 53 random bits.
  double uniform(uint64_t i) const { return static_cast<double>(bits(i) >> 11) * 0x1.0p-53; }
  // Standard normal for element i (Box-Muller on the uniforms of pair i / 2: cosine for even i, sine for odd).
  double normal(uint64_t i) const;

 private:
  explicit RandomStream(uint64_t key) : key_(key) {}
  uint64_t key_;
};

}  // namespace portable
}  // namespace ember
