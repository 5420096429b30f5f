#include "kernels/portable/util/random_util.h"

#include <math.h>

#include <atomic>

namespace ember {
namespace portable {
namespace {

// 32-bit atomics: lock-free on every target (Cortex-M included), where 64-bit ones may need a library.
std::atomic<uint32_t> g_seed_lo{static_cast<uint32_t>(kDefaultRandomSeed)};
std::atomic<uint32_t> g_seed_hi{static_cast<uint32_t>(kDefaultRandomSeed >> 32)};
std::atomic<uint32_t> g_calls{0};

// splitmix64's output function: a bijection whose outputs pass BigCrush for consecutive inputs.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void seed_random(uint64_t seed) {
  g_seed_lo.store(static_cast<uint32_t>(seed), std::memory_order_relaxed);
  g_seed_hi.store(static_cast<uint32_t>(seed >> 32), std::memory_order_relaxed);
  g_calls.store(0, std::memory_order_relaxed);
}

RandomStream RandomStream::next() {
  const uint64_t seed = (static_cast<uint64_t>(g_seed_hi.load(std::memory_order_relaxed)) << 32) |
                        g_seed_lo.load(std::memory_order_relaxed);
  const uint64_t k = g_calls.fetch_add(1, std::memory_order_relaxed);
  return RandomStream(mix64(seed + k * 0xD1B54A32D192ED03ull));
}

uint64_t RandomStream::bits(uint64_t i) const { return mix64(key_ + (i + 1) * 0x9E3779B97F4A7C15ull); }

double RandomStream::normal(uint64_t i) const {
  const uint64_t pair = i / 2;
  // u1 in (0, 1] keeps the logarithm finite.
  const double u1 = static_cast<double>((bits(2 * pair) >> 11) + 1) * 0x1.0p-53;
  const double u2 = uniform(2 * pair + 1);
  const double r = sqrt(-2.0 * log(u1));
  const double angle = 6.283185307179586 * u2;
  return (i & 1) ? r * sin(angle) : r * cos(angle);
}

}  // namespace portable
}  // namespace ember
