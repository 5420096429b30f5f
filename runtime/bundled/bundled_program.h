// A bundled program (.bpte, ExecuTorch's "BP08"): a .pte with test cases inside, checked on the device.
//
// A library of its own, linked only into runners that verify (runtime/runner:runner_verify, firmware built
// with it): a per-model runtime that does not verify pays nothing for it.
//
//   Result<BundledProgram> b = BundledProgram::parse(bytes, size);   // every field checked, once
//   BufferDataLoader loader(b->program_data(), b->program_size());  // the embedded .pte
//   Program::load(&loader) ... load_method(b->method_name(s)) ...
//   b->load_inputs(method, s, c); method.execute(); b->check_outputs(method, s, c, &report);
//
// The file is untrusted: parse() runs flatbuffers' verifier and then checks every field the other calls read
// (kinds, dtypes, shapes against data sizes, dim orders, tolerances, the embedded program's alignment), so
// they read without checking again. Nothing here allocates.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/result.h"
#include "runtime/executor/method.h"

namespace ember_bundled {
struct BundledProgram;
}

namespace ember {
namespace bundled {

// How one test case's outputs compared with the bundled ones. An element passes when
// |actual - expected| <= atol + rtol * |expected| (NaN equals NaN, and an infinity the same infinity), as
// ExecuTorch's verify does; integer and Bool elements must be equal.
struct CaseReport {
  bool passed = true;
  size_t outputs = 0;          // outputs compared
  uint64_t elements = 0;       // elements compared, over all outputs
  uint64_t failed_elements = 0;
  // The largest |actual - expected| over every element (infinite for a NaN against a number), where it is,
  // and the two values there.
  double worst_error = 0;
  size_t worst_output = 0;
  uint64_t worst_index = 0;
  double worst_actual = 0, worst_expected = 0;
  // Set when an output could not be compared element by element (another dtype, shape or kind): what differs,
  // and at which output.
  const char* mismatch = nullptr;
  size_t mismatch_output = 0;
};

class BundledProgram {
 public:
  // The embedded program's start within the file must be a multiple of this (the schema's force_align).
  static constexpr size_t kProgramAlignment = 32;
  // The tolerances a file without Ember's own fields means: ExecuTorch's verify defaults.
  static constexpr double kDefaultAtol = 1e-8;
  static constexpr double kDefaultRtol = 1e-5;

  // Whether `data` starts like a .bpte (identifier "BP08" at byte 4); says nothing about the rest.
  static bool is_bundled_program(const void* data, size_t size);

  // Checks the whole file; `data` must be 8-byte aligned (it holds 8-byte scalars) and outlive the result.
  static Result<BundledProgram> parse(const void* data, size_t size);

  // The embedded .pte, for a loader and Program::load.
  const void* program_data() const { return program_; }
  size_t program_size() const { return program_size_; }
  size_t program_offset() const { return program_offset_; }

  size_t num_suites() const;
  const char* method_name(size_t suite) const;
  size_t num_cases(size_t suite) const;
  double atol(size_t suite) const;
  double rtol(size_t suite) const;

  // Copies case `test_case`'s inputs into `method` (whose name must be the suite's); each is checked against
  // the method's own inputs by Method::set_input.
  Error load_inputs(Method& method, size_t suite, size_t test_case) const;

  // Compares `method`'s outputs (after execute) with the case's expected outputs; fills `report`. Returns an
  // error only when the call itself is wrong (indices, output count); a failed comparison is report->passed.
  Error check_outputs(const Method& method, size_t suite, size_t test_case, double atol, double rtol,
                      CaseReport* report) const;

 private:
  BundledProgram(const ember_bundled::BundledProgram* root, const uint8_t* program, size_t program_size,
                 size_t program_offset)
      : root_(root), program_(program), program_size_(program_size), program_offset_(program_offset) {}

  const ember_bundled::BundledProgram* root_;
  const uint8_t* program_;
  size_t program_size_;
  size_t program_offset_;
};

}  // namespace bundled
}  // namespace ember
