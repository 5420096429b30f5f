// The zoo half of the soak: a program through Ember's C API (ember.h), as an embedder drives it.
//
// run_soak: the program mapped and its method loaded once, then executed `steps` times over a few input sets
// drawn from a seed, each run's outputs compared bit for bit with that set's first outputs.
// cycle_soak: `steps` times the whole life of a program (loaded, alternately mapped and read into memory; its
// method loaded into memory Ember allocates; inputs set; executed; outputs compared; method and program
// destroyed), where a leak of anything load or destroy owns would show.
#pragma once

#include <stdint.h>

#include "tests/soak/resource_samples.h"

namespace ember {
namespace soak {

struct ZooOptions {
  const char* path = nullptr;
  uint64_t steps = 0;
  uint64_t sample_every = 1;
  uint64_t seed = 0;
  int input_sets = 8;
};

// False (with the reason on stderr) when a call fails, an output differs or `series` finds growth.
bool run_soak(const ZooOptions& options, SampleSeries* series);
bool cycle_soak(const ZooOptions& options, SampleSeries* series);

}  // namespace soak
}  // namespace ember
