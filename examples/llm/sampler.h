// Choosing the next token from a forward pass's logits: greedy (argmax) at temperature 0, otherwise a draw from
// softmax(logits / temperature) with a seeded generator of our own, so a seed gives the same tokens on every
// machine and build (no std::mt19937 / std::uniform_real_distribution, whose outputs the standard does not fix).
//
// The generator is xoshiro256** (Blackman and Vigna, 2018), its 256-bit state filled from the seed by
// SplitMix64, as its authors recommend. A draw is u = (next() >> 11) * 2^-53, uniform in [0, 1); the token is the
// first index whose cumulative probability (softmax in double, max-subtracted) exceeds u * total. One draw per
// sampled token; greedy decoding draws nothing. With top_p below 1 (nucleus sampling) the draw is over the fewest
// most probable tokens whose probabilities reach top_p, walked from the most probable (ties: lower index first).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <utility>
#include <vector>

#include "runtime/core/result.h"

namespace ember {
namespace llm {

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  // Uniform in [0, 1), 53 random bits.
  double uniform();

 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  // temperature 0: argmax; > 0: sampling. InvalidArgument for a negative or non-finite temperature, or a top_p
  // outside (0, 1].
  static Result<Sampler> create(float temperature, uint64_t seed, float top_p = 1.0f);

  // The next token of `n` logits. Ties in argmax go to the lowest index (as torch.argmax and transformers'
  // greedy search). InvalidArgument when n is 0 or, when sampling, when no logit is finite.
  Result<int32_t> sample(const float* logits, size_t n);

  float temperature() const { return temperature_; }
  float top_p() const { return top_p_; }

 private:
  Sampler(float temperature, uint64_t seed, float top_p) : temperature_(temperature), top_p_(top_p), rng_(seed) {}
  // The draw over the nucleus: weights[i] = exp((logit - max) / T), summing to `total`.
  int32_t sample_nucleus(const float* logits, size_t n, float max, double inv_t, double total);
  float temperature_;
  float top_p_;
  Xoshiro256 rng_;
  std::vector<std::pair<double, int32_t>> ranked_;  // reused by sample_nucleus
};

// Index of the largest of `n` values (the first on ties; NaN never wins). n must be > 0.
int32_t argmax(const float* values, size_t n);

}  // namespace llm
}  // namespace ember
