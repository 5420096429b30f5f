#include "examples/llm/sampler.h"

#include <math.h>

#include <algorithm>

#include "runtime/core/log.h"

namespace ember {
namespace llm {
namespace {

uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Xoshiro256::Xoshiro256(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) s = splitmix64(&x);  // never all zero: SplitMix64 outputs are a bijection of x
}

uint64_t Xoshiro256::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Xoshiro256::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int32_t argmax(const float* values, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    // `!(a <= b)` rather than `a > b` would let a NaN win; keep NaN out, and a NaN at 0 loses to any number.
    if (values[i] > values[best] || (isnan(values[best]) && !isnan(values[i]))) best = i;
  }
  return static_cast<int32_t>(best);
}

Result<Sampler> Sampler::create(float temperature, uint64_t seed, float top_p) {
  EMBER_CHECK_OR_RETURN_ERROR(isfinite(temperature) && temperature >= 0.0f, InvalidArgument,
                              "temperature must be a finite number >= 0, got %g", static_cast<double>(temperature));
  EMBER_CHECK_OR_RETURN_ERROR(top_p > 0.0f && top_p <= 1.0f, InvalidArgument, "top_p must be in (0, 1], got %g",
                              static_cast<double>(top_p));
  return Sampler(temperature, seed, top_p);
}

int32_t Sampler::sample_nucleus(const float* logits, size_t n, float max, double inv_t, double total) {
  ranked_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (isfinite(logits[i])) ranked_.emplace_back(exp((static_cast<double>(logits[i]) - max) * inv_t), int32_t(i));
  }
  // Most probable first, lower index first among equals, so the nucleus and the walk are the same on every build.
  auto before = [](const std::pair<double, int32_t>& a, const std::pair<double, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  // The nucleus is usually a few dozen tokens of tens of thousands: sort a growing head until it reaches top_p.
  const double threshold = static_cast<double>(top_p_) * total;
  size_t sorted = 0, kept = 0;
  double mass = 0.0;
  for (size_t head = 64;; head *= 4) {
    head = head < ranked_.size() ? head : ranked_.size();
    std::partial_sort(ranked_.begin() + sorted, ranked_.begin() + head, ranked_.end(), before);
    for (; kept < head && mass < threshold; ++kept) mass += ranked_[kept].first;
    sorted = head;
    if (mass >= threshold || head == ranked_.size()) break;
  }
  const double target = rng_.uniform() * mass;
  double cumulative = 0.0;
  for (size_t k = 0; k < kept; ++k) {
    cumulative += ranked_[k].first;
    if (cumulative > target) return ranked_[k].second;
  }
  return ranked_[kept - 1].second;  // rounding left target at the nucleus's mass: its least probable token
}

Result<int32_t> Sampler::sample(const float* logits, size_t n) {
  EMBER_CHECK_OR_RETURN_ERROR(n > 0 && n <= static_cast<size_t>(INT32_MAX), InvalidArgument,
                              "cannot sample from %zu logits", n);
  if (temperature_ == 0.0f) return argmax(logits, n);
  // softmax(logits / T) without forming it: weights exp((l - max) / T) summed in double, then one walk of the
  // cumulative sum. Non-finite logits get weight 0 (a -inf logit is a masked token).
  float max = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (isfinite(logits[i]) && logits[i] > max) max = logits[i];
  }
  EMBER_CHECK_OR_RETURN_ERROR(isfinite(max), InvalidArgument, "none of the %zu logits is a finite number", n);
  const double inv_t = 1.0 / static_cast<double>(temperature_);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (isfinite(logits[i])) total += exp((static_cast<double>(logits[i]) - max) * inv_t);
  }
  if (top_p_ < 1.0f) return sample_nucleus(logits, n, max, inv_t, total);
  const double target = rng_.uniform() * total;
  double cumulative = 0.0;
  size_t last = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(logits[i])) continue;
    cumulative += exp((static_cast<double>(logits[i]) - max) * inv_t);
    last = i;
    if (cumulative > target) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);  // rounding left target at (or past) the total: the last finite token
}

}  // namespace llm
}  // namespace ember
