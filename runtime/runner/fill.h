// Generated input values shared by every runner (Linux, bare metal), so the same spec gives the same bytes on
// every target and outputs can be compared across them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/error.h"
#include "runtime/core/scalar_type.h"

namespace ember {

// An input spec with an optional shape, "random:7@[1,37]": the part before '@' goes to `base` (cut to
// `base_cap` - 1 characters), the sizes to `sizes` (at most `max_rank`), their count to `rank` (-1 without a
// shape, which keeps the input's current shape). False when the shape part is malformed.
bool parse_input_spec(const char* spec, char* base, size_t base_cap, int32_t* sizes, int max_rank, int* rank);

// Whether `spec` names generated values: zeros | ones | random[:SEED] (anything else is a file).
bool is_generated_spec(const char* spec);

// Writes `n` values of `type` to `data`: zeros, ones, or a 64-bit LCG's stream (uniform in [-1, 1) for floating
// types, integers in [0, 10), bools true for the upper half), seeded with SEED (default 42).
// NotSupported for a dtype it cannot generate.
Error fill_generated(ScalarType type, void* data, int64_t n, const char* spec);

}  // namespace ember
