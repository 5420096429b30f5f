// Choosing the next token from a forward pass's logits: greedy (argmax) at temperature 0, otherwise a draw from
// softmax(logits / temperature) with a seeded generator of our own, so a seed gives the same tokens on every
// machine and build (no std::mt19937 / std::uniform_real_distribution, whose outputs the standard does not fix).
//
// The generator is xoshiro256** (Blackman and Vigna, 2018), its 256-bit state filled from the seed by
// SplitMix64, as its authors recommend. A draw is u = (next() >> 11) * 2^-53, uniform in [0, 1); the token is the
// first index whose cumulative probability (softmax in double, max-subtracted) exceeds u * total. One draw per
// sampled token; greedy decoding draws nothing.
#pragma once

#include <stddef.h>
#include <stdint.h>

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
  // temperature 0: argmax; > 0: sampling. InvalidArgument (see create) for a negative or non-finite one.
  static Result<Sampler> create(float temperature, uint64_t seed);

  // The next token of `n` logits. Ties in argmax go to the lowest index (as torch.argmax and transformers'
  // greedy search). InvalidArgument when n is 0 or, when sampling, when no logit is finite.
  Result<int32_t> sample(const float* logits, size_t n);

  float temperature() const { return temperature_; }

 private:
  Sampler(float temperature, uint64_t seed) : temperature_(temperature), rng_(seed) {}
  float temperature_;
  Xoshiro256 rng_;
};

// Index of the largest of `n` values (the first on ties; NaN never wins). n must be > 0.
int32_t argmax(const float* values, size_t n);

}  // namespace llm
}  // namespace ember
