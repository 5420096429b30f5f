// The board runner's --verify (firmware built with ember_firmware(verify = True), which embeds a .bpte): runs
// every test case the bundle holds for the embedded method, on the board, and prints a line per case as the host's
// runner_verify does. Exit 0 when all pass, 1 when a case fails, 3/4/5 as the runner's.
#include "platforms/bare_metal/verify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "platforms/bare_metal/embedded_program.h"
#include "runtime/bundled/bundled_program.h"

namespace ember {

namespace {

// "6.71e-08": three significant digits without newlib's float printf (which would need a heap).
void sci(char* buf, size_t size, double v) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
    return;
  }
  if (v == 0) {
    snprintf(buf, size, "0");
    return;
  }
  const char* sign = v < 0 ? "-" : "";
  v = fabs(v);
  int e = static_cast<int>(floor(log10(v)));
  long m = lround(v / pow(10.0, e - 2));
  if (m >= 1000) {
    m /= 10;
    ++e;
  }
  snprintf(buf, size, "%s%ld.%02lde%c%02d", sign, m / 100, m % 100, e < 0 ? '-' : '+', e < 0 ? -e : e);
}

}  // namespace

int board_verify(Method& method, void (*out)(const char*, ...)) {
  Result<bundled::BundledProgram> bundle = bundled::BundledProgram::parse(kEmbeddedBundle, kEmbeddedBundleSize);
  if (!bundle.ok()) {
    out("verify: the embedded bundle %s is not usable: %s\n", kEmbeddedProgramName, error_name(bundle.error()));
    return 3;
  }
  size_t passed = 0, total = 0;
  for (size_t s = 0; s < bundle->num_suites(); ++s) {
    if (strcmp(bundle->method_name(s), method.name()) != 0) continue;
    const double atol = bundle->atol(s), rtol = bundle->rtol(s);
    for (size_t c = 0; c < bundle->num_cases(s); ++c) {
      ++total;
      Error e = bundle->load_inputs(method, s, c);
      if (e != Error::Ok) {
        out("verify: %s case %u: inputs refused: %s\n", method.name(), static_cast<unsigned>(c), error_name(e));
        return 4;
      }
      e = method.execute();
      if (e != Error::Ok) {
        out("verify: %s case %u: execution failed: %s\n", method.name(), static_cast<unsigned>(c), error_name(e));
        return 5;
      }
      bundled::CaseReport r;
      e = bundle->check_outputs(method, s, c, atol, rtol, &r);
      if (e != Error::Ok) {
        out("verify: %s case %u: outputs not comparable: %s\n", method.name(), static_cast<unsigned>(c), error_name(e));
        return 3;
      }
      char err[24], got[24], want[24], a[24], rt[24];
      sci(err, sizeof(err), r.worst_error);
      sci(got, sizeof(got), r.worst_actual);
      sci(want, sizeof(want), r.worst_expected);
      sci(a, sizeof(a), atol);
      sci(rt, sizeof(rt), rtol);
      out("case %s/%u: %s  worst |error| %s at output %u element %lu (got %s, expected %s); %lu of %lu elements "
          "beyond atol %s + rtol %s%s%s\n",
          method.name(), static_cast<unsigned>(c), r.passed ? "PASS" : "FAIL", err,
          static_cast<unsigned>(r.worst_output), static_cast<unsigned long>(r.worst_index), got, want,
          static_cast<unsigned long>(r.failed_elements), static_cast<unsigned long>(r.elements), a, rt,
          r.mismatch != nullptr ? "; an output has " : "", r.mismatch != nullptr ? r.mismatch : "");
      if (r.passed) ++passed;
    }
  }
  out("verify: %u of %u cases passed\n", static_cast<unsigned>(passed), static_cast<unsigned>(total));
  return passed == total ? 0 : 1;
}

}  // namespace ember
