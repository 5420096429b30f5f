// runner --verify: runs every test case of a bundled program (.bpte) and compares the outputs.
//
//   runner_verify MODEL.bpte --verify [--method NAME] [--atol A] [--rtol R] [--instruction-limit N]
//
// Prints one line per case (PASS/FAIL, the worst absolute error, the output and element where it is) and a
// summary. Exit codes as the runner's (2 usage, 3 the bundle, program or a method refused, 4 a case's inputs
// refused, 5 execution failed), and 1 when a case ran and its outputs are not within tolerance. --atol and
// --rtol replace the tolerances stored in the bundle.
#include "runtime/runner/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bundled/bundled_program.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/runner/host_memory.h"
#include "runtime/runner/memory_claims.h"

namespace ember {

namespace {

// The runner's buffers for one method, freed when it goes out of scope.
struct MethodMemory {
  void* blocks[MemoryClaims::kMaxPools + 2] = {};
  size_t count = 0;
  void* keep(size_t bytes) {
    if (bytes > SIZE_MAX - 32) return nullptr;
    void* p = host_aligned_alloc(16, (bytes + 15) / 16 * 16 + 16);
    return p != nullptr ? blocks[count++] = p : nullptr;
  }
  ~MethodMemory() {
    for (size_t i = 0; i < count; ++i) host_aligned_free(blocks[i]);
  }
};

bool parse_double(const char* text, double* out) {
  char* end = nullptr;
  const double v = strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0 && v <= 1e300)) return false;
  *out = v;
  return true;
}

// Reads the whole file into 16-byte-aligned memory (the bundle holds 8-byte scalars and a 32-byte-aligned
// program, both relative to its start).
uint8_t* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return nullptr;
  uint8_t* data = nullptr;
  if (fseek(f, 0, SEEK_END) == 0) {
    const long length = ftell(f);
    if (length > 0 && fseek(f, 0, SEEK_SET) == 0) {
      data = static_cast<uint8_t*>(host_aligned_alloc(32, (static_cast<size_t>(length) + 31) / 32 * 32));
      if (data != nullptr && fread(data, 1, static_cast<size_t>(length), f) != static_cast<size_t>(length)) {
        host_aligned_free(data);
        data = nullptr;
      }
      *size = static_cast<size_t>(length);
    }
  }
  fclose(f);
  return data;
}

// Runs every case of suite `s`; returns an exit code (0 when all pass) and counts cases.
int verify_suite(const Program& program, const bundled::BundledProgram& bundle, size_t s, const double* atol,
                 const double* rtol, long long instruction_limit, size_t* passed, size_t* total) {
  const char* name = bundle.method_name(s);
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) {
    fprintf(stderr, "verify: the bundle tests method '%s', which the program lacks: %s\n", name,
            error_name(meta.error()));
    return 3;
  }
  MemoryClaims claims;
  char why[320];
  if (!read_memory_claims(meta.get(), physical_memory_bytes(), &claims, why, sizeof(why))) {
    fprintf(stderr, "verify: method '%s': %s\n", name, why);
    return 3;
  }
  MethodMemory owned;
  Span<uint8_t> pools[MemoryClaims::kMaxPools];
  for (size_t p = 0; p < claims.num_pools; ++p) {
    uint8_t* data = static_cast<uint8_t*>(owned.keep(claims.pool_bytes[p]));
    if (data == nullptr) {
      fprintf(stderr, "verify: cannot allocate pool %zu of method '%s': %zu bytes\n", p + 1, name,
              claims.pool_bytes[p]);
      return 3;
    }
    pools[p] = Span<uint8_t>(data, claims.pool_bytes[p]);
  }
  void* method_buffer = owned.keep(claims.method_allocator_bytes);
  void* temp_buffer = owned.keep(claims.scratch_bytes);
  if (method_buffer == nullptr || temp_buffer == nullptr) {
    fprintf(stderr, "verify: cannot allocate method '%s''s allocator (%zu bytes) and scratch (%zu bytes)\n", name,
            claims.method_allocator_bytes, claims.scratch_bytes);
    return 3;
  }
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools, claims.num_pools));
  MemoryAllocator method_alloc(method_buffer, claims.method_allocator_bytes);
  MemoryAllocator temp_alloc(temp_buffer, claims.scratch_bytes);
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;
  Result<Method> method = program.load_method(name, &memory);
  if (!method.ok()) {
    fprintf(stderr, "verify: method '%s' did not load: %s\n", name, error_name(method.error()));
    return 3;
  }
  method->set_instruction_limit(static_cast<uint64_t>(instruction_limit));
  const double a = atol != nullptr ? *atol : bundle.atol(s);
  const double r = rtol != nullptr ? *rtol : bundle.rtol(s);
  int status = 0;
  for (size_t c = 0; c < bundle.num_cases(s); ++c) {
    ++*total;
    Error e = bundle.load_inputs(method.get(), s, c);
    if (e != Error::Ok) {
      fprintf(stderr, "verify: %s case %zu: inputs refused: %s\n", name, c, error_name(e));
      return 4;
    }
    e = method->execute();
    if (e != Error::Ok) {
      fprintf(stderr, "verify: %s case %zu: execution failed: %s\n", name, c, error_name(e));
      return 5;
    }
    bundled::CaseReport report;
    e = bundle.check_outputs(method.get(), s, c, a, r, &report);
    if (e != Error::Ok) {
      fprintf(stderr, "verify: %s case %zu: outputs not comparable: %s\n", name, c, error_name(e));
      return 3;
    }
    printf(
        "case %s/%zu: %s  worst |error| %.3g at output %zu element %llu (got %.9g, expected %.9g); %llu of %llu "
        "elements beyond atol %g + rtol %g",
        name, c, report.passed ? "PASS" : "FAIL", report.worst_error, report.worst_output,
        static_cast<unsigned long long>(report.worst_index), report.worst_actual, report.worst_expected,
        static_cast<unsigned long long>(report.failed_elements), static_cast<unsigned long long>(report.elements), a,
        r);
    if (report.mismatch != nullptr) printf("; output %zu has %s", report.mismatch_output, report.mismatch);
    printf("\n");
    if (report.passed) {
      ++*passed;
    } else {
      status = 1;
    }
  }
  return status;
}

}  // namespace

bool wants_verify(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--verify") == 0) return true;
  }
  return false;
}

int verify_main(int argc, char** argv) {
  const char* model = nullptr;
  const char* only = nullptr;
  double atol = 0, rtol = 0;
  bool has_atol = false, has_rtol = false;
  long long instruction_limit = 100000000;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const bool has_value = i + 1 < argc;
    bool ok = true;
    if (strcmp(a, "--verify") == 0) {
      continue;
    } else if (strcmp(a, "--model") == 0 && has_value) {
      model = argv[++i];
    } else if (strcmp(a, "--method") == 0 && has_value) {
      only = argv[++i];
    } else if (strcmp(a, "--atol") == 0 && has_value) {
      ok = has_atol = parse_double(argv[++i], &atol);
    } else if (strcmp(a, "--rtol") == 0 && has_value) {
      ok = has_rtol = parse_double(argv[++i], &rtol);
    } else if (strcmp(a, "--instruction-limit") == 0 && has_value) {
      char* end = nullptr;
      instruction_limit = strtoll(argv[++i], &end, 10);
      ok = end != argv[i] && *end == '\0' && instruction_limit >= 0;
    } else if (a[0] != '-' && model == nullptr) {
      model = a;
    } else {
      ok = false;
    }
    if (!ok) {
      fprintf(stderr,
              "usage: %s MODEL.bpte --verify [--method NAME] [--atol A] [--rtol R] [--instruction-limit N]\n"
              "  (--atol and --rtol take a number in [0, 1e300]; without them the bundle's own are used)\n",
              argv[0]);
      return 2;
    }
  }
  if (model == nullptr) {
    fprintf(stderr, "usage: %s MODEL.bpte --verify [--method NAME] [--atol A] [--rtol R]\n", argv[0]);
    return 2;
  }
  size_t size = 0;
  uint8_t* data = read_file(model, &size);
  if (data == nullptr) {
    fprintf(stderr, "verify: cannot read %s\n", model);
    return 3;
  }
  struct Freed {
    void* p;
    ~Freed() { host_aligned_free(p); }
  } freed{data};
  Result<bundled::BundledProgram> bundle = bundled::BundledProgram::parse(data, size);
  if (!bundle.ok()) {
    fprintf(stderr, "verify: %s is not a usable bundled program: %s\n", model, error_name(bundle.error()));
    return 3;
  }
  BufferDataLoader loader(bundle->program_data(), bundle->program_size());
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    fprintf(stderr, "verify: the program inside %s is not loadable: %s\n", model, error_name(program.error()));
    return 3;
  }
  printf("verify: %s: program %zu bytes at byte %zu, %zu test suites\n", model, bundle->program_size(),
         bundle->program_offset(), bundle->num_suites());
  size_t passed = 0, total = 0, suites = 0;
  int status = 0;
  for (size_t s = 0; s < bundle->num_suites(); ++s) {
    if (only != nullptr && strcmp(only, bundle->method_name(s)) != 0) continue;
    ++suites;
    const int code = verify_suite(program.get(), bundle.get(), s, has_atol ? &atol : nullptr,
                                  has_rtol ? &rtol : nullptr, instruction_limit, &passed, &total);
    if (code > 1) return code;
    if (code != 0) status = code;
  }
  if (only != nullptr && suites == 0) {
    fprintf(stderr, "verify: %s has no test suite for method '%s'\n", model, only);
    return 3;
  }
  printf("verify: %zu of %zu cases passed\n", passed, total);
  return status;
}

}  // namespace ember
