#include "runtime/runner/fill.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/bfloat16.h"
#include "runtime/core/half.h"

namespace ember {
namespace {

struct Lcg {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

}  // namespace

bool parse_input_spec(const char* spec, char* base, size_t base_cap, int32_t* sizes, int max_rank, int* rank) {
  // A file path may contain '@'; only a trailing "@[...]" is a shape.
  const char* at = strrchr(spec, '@');
  const size_t len = strlen(spec);
  if (at == nullptr || at[1] != '[' || len < 3 || spec[len - 1] != ']') at = nullptr;
  const size_t n = at ? static_cast<size_t>(at - spec) : len;
  const size_t kept = n < base_cap - 1 ? n : base_cap - 1;
  memcpy(base, spec, kept);
  base[kept] = '\0';
  *rank = -1;
  if (at == nullptr) return true;
  int r = 0;
  const char* p = at + 2;
  if (*p == ']') {  // "@[]": a 0-d input
    *rank = 0;
    return p[1] == '\0';
  }
  while (true) {
    char* end = nullptr;
    const long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v > INT32_MAX || r == max_rank) return false;
    sizes[r++] = static_cast<int32_t>(v);
    while (*end == ' ') ++end;
    if (*end == ']') {
      if (end[1] != '\0') return false;
      break;
    }
    if (*end != ',') return false;
    p = end + 1;
  }
  *rank = r;
  return true;
}

bool is_generated_spec(const char* spec) {
  return strcmp(spec, "zeros") == 0 || strcmp(spec, "ones") == 0 || strcmp(spec, "random") == 0 ||
         strncmp(spec, "random:", 7) == 0;
}

Error fill_generated(ScalarType type, void* data, int64_t n, const char* spec) {
  const bool zeros = strcmp(spec, "zeros") == 0, ones = strcmp(spec, "ones") == 0;
  // Only "random:SEED" has a seed: shorter specs ("ones") end before the colon's position.
  switch (type) {
    case ScalarType::Float:
    case ScalarType::Double:
    case ScalarType::Half:
    case ScalarType::BFloat16:
    case ScalarType::Long:
    case ScalarType::Int:
    case ScalarType::Short:
    case ScalarType::Char:
    case ScalarType::Byte:
    case ScalarType::Bool: break;
    // Refused whatever n is: an empty tensor of a type with no generator must not pass either.
    default: return Error::NotSupported;
  }
  Lcg rng{strncmp(spec, "random:", 7) == 0 ? strtoull(spec + 7, nullptr, 10) : 42u};
  for (int64_t i = 0; i < n; ++i) {
    // Both draws happen for every element whatever the dtype, so streams line up across dtypes.
    const double v = zeros ? 0.0 : ones ? 1.0 : rng.next() * 2.0 - 1.0;
    const double iv = zeros ? 0.0 : ones ? 1.0 : static_cast<double>(static_cast<int>(rng.next() * 10));
    switch (type) {
      case ScalarType::Float: static_cast<float*>(data)[i] = static_cast<float>(v); break;
      case ScalarType::Double: static_cast<double*>(data)[i] = v; break;
      case ScalarType::Half: static_cast<Half*>(data)[i] = Half(static_cast<float>(v)); break;
      case ScalarType::BFloat16: static_cast<BFloat16*>(data)[i] = BFloat16(static_cast<float>(v)); break;
      case ScalarType::Long: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(iv); break;
      case ScalarType::Int: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(iv); break;
      case ScalarType::Char: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(iv); break;
      case ScalarType::Byte: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(iv); break;
      case ScalarType::Short: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(iv); break;
      // Random bools are true for about half the draws (iv is 0..9); "ones" must be all true, not 1 >= 5.
      case ScalarType::Bool: static_cast<bool*>(data)[i] = ones || (!zeros && iv >= 5.0); break;
      default: return Error::NotSupported;
    }
  }
  return Error::Ok;
}

}  // namespace ember
