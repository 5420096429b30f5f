// Fuzz target: the runner's generated-input specs (runtime/runner/fill.cc), the only text the runners parse
// besides flags: `--input zeros|ones|random[:SEED]`. The input is a dtype byte, an element count and the spec
// string. A spec the runner treats as generated must fill exactly the tensor's bytes (AddressSanitizer sees
// any write past them) or refuse the dtype; zeros and ones must mean what they say.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runner/fill.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::FuzzInput in(data, size);
  const int type_number = in.u8() % (kNumScalarTypes + 2);  // two invalid numbers past the last type
  const int64_t n = in.u16() % 1025;
  // The spec: the rest of the input as a C string, cut at the first NUL as argv would be.
  const size_t len = in.remaining();
  char* spec = static_cast<char*>(malloc(len + 1));
  memcpy(spec, in.rest(), len);
  spec[len] = '\0';

  if (is_generated_spec(spec)) {
    const ScalarType type = static_cast<ScalarType>(type_number);
    const size_t element = element_size(type);
    const size_t nbytes = static_cast<size_t>(n) * (element ? element : 1);
    uint8_t* out = static_cast<uint8_t*>(malloc(nbytes ? nbytes : 1));
    const Error e = fill_generated(type, out, n, spec);
    if (e == Error::Ok && element == 0) {
      fprintf(stderr, "runner_fill_fuzz: '%s' filled dtype %d, which has no storage\n", spec, type_number);
      abort();
    }
    if (e == Error::Ok && (strcmp(spec, "zeros") == 0 || strcmp(spec, "ones") == 0)) {
      // Every supported dtype stores zero as all-zero bytes; ones then must not be all zeros.
      bool all_zero = true;
      for (size_t i = 0; i < nbytes; ++i) all_zero = all_zero && out[i] == 0;
      if (all_zero != (spec[0] == 'z' || n == 0)) {
        fprintf(stderr, "runner_fill_fuzz: '%s' for dtype %d gave the wrong values\n", spec, type_number);
        abort();
      }
    }
    free(out);
  }
  free(spec);
  return 0;
}
