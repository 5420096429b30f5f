// The bundled-program half of _ember_runtime (registered by bindings.cc): verify a .bpte with the same C++ code
// a device runs (runtime/bundled), and hand its embedded program to Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/bundled/bundled_program.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/python/pal_recording.h"
#include "runtime/runner/memory_claims.h"

namespace py = pybind11;

namespace ember {
namespace python {

namespace {

[[noreturn]] void fail(const std::string& what, Error e) {
  std::string msg = what + ": " + error_name(e);
  if (g_last_error[0] != '\0') msg += " (" + std::string(g_last_error) + ")";
  g_last_error[0] = '\0';
  throw std::runtime_error(msg);
}

// 32-byte-aligned bytes: the bundle's 8-byte scalars and its 32-byte-aligned program keep their alignment.
struct AlignedBytes {
  std::vector<uint64_t> words;
  size_t offset = 0;
  explicit AlignedBytes(size_t bytes) : words(bytes / 8 + 6) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(words.data());
    offset = (32 - p % 32) % 32;
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()) + offset; }
};

struct Parsed {
  AlignedBytes storage;
  bundled::BundledProgram bundle;
};

std::unique_ptr<Parsed> parse(const std::string& data) {
  AlignedBytes storage(data.size());
  memcpy(storage.data(), data.data(), data.size());
  Result<bundled::BundledProgram> b = bundled::BundledProgram::parse(storage.data(), data.size());
  if (!b.ok()) fail("reading the bundled program", b.error());
  // The vector moves its heap block, so the parsed pointers stay valid.
  return std::unique_ptr<Parsed>(new Parsed{std::move(storage), b.get()});
}

py::bytes program_bytes(const std::string& data) {
  std::unique_ptr<Parsed> p = parse(data);
  return py::bytes(static_cast<const char*>(p->bundle.program_data()), p->bundle.program_size());
}

// Every case of every suite (or of `method`), run and compared; one dict per case.
py::list verify(const std::string& data, py::object atol, py::object rtol, py::object only) {
  std::unique_ptr<Parsed> parsed = parse(data);
  const bundled::BundledProgram& bundle = parsed->bundle;
  BufferDataLoader loader(bundle.program_data(), bundle.program_size());
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) fail("loading the bundle's program", program.error());
  py::list results;
  size_t suites = 0;
  for (size_t s = 0; s < bundle.num_suites(); ++s) {
    const std::string name = bundle.method_name(s);
    if (!only.is_none() && only.cast<std::string>() != name) continue;
    ++suites;
    Result<MethodMeta> meta = program->method_meta(name.c_str());
    if (!meta.ok()) fail("the bundle tests method '" + name + "'", meta.error());
    MemoryClaims claims;
    char why[320];
    if (!read_memory_claims(meta.get(), physical_memory_bytes(), &claims, why, sizeof(why))) {
      throw std::runtime_error("method '" + name + "': " + why);
    }
    std::vector<std::unique_ptr<AlignedBytes>> storage;
    std::vector<Span<uint8_t>> pools;
    for (size_t p = 0; p < claims.num_pools; ++p) {
      storage.emplace_back(new AlignedBytes(claims.pool_bytes[p]));
      pools.emplace_back(storage.back()->data(), claims.pool_bytes[p]);
    }
    storage.emplace_back(new AlignedBytes(claims.method_allocator_bytes));
    MemoryAllocator method_alloc(storage.back()->data(), claims.method_allocator_bytes);
    storage.emplace_back(new AlignedBytes(claims.scratch_bytes));
    MemoryAllocator temp_alloc(storage.back()->data(), claims.scratch_bytes);
    HierarchicalAllocator planned(Span<Span<uint8_t>>(pools.data(), pools.size()));
    MemoryManager memory{&method_alloc, &planned, &temp_alloc};
    Result<Method> method = program->load_method(name.c_str(), &memory);
    if (!method.ok()) fail("loading method '" + name + "'", method.error());
    const double a = atol.is_none() ? bundle.atol(s) : atol.cast<double>();
    const double r = rtol.is_none() ? bundle.rtol(s) : rtol.cast<double>();
    for (size_t c = 0; c < bundle.num_cases(s); ++c) {
      const std::string where = "method '" + name + "' case " + std::to_string(c);
      Error e = bundle.load_inputs(method.get(), s, c);
      if (e != Error::Ok) fail(where + ": inputs", e);
      {
        py::gil_scoped_release release;
        e = method->execute();
      }
      if (e != Error::Ok) fail(where + ": executing", e);
      bundled::CaseReport report;
      e = bundle.check_outputs(method.get(), s, c, a, r, &report);
      if (e != Error::Ok) fail(where + ": comparing outputs", e);
      py::dict d;
      d["method"] = name;
      d["case"] = c;
      d["passed"] = report.passed;
      d["worst_error"] = report.worst_error;
      d["worst_output"] = report.worst_output;
      d["worst_index"] = report.worst_index;
      d["actual"] = report.worst_actual;
      d["expected"] = report.worst_expected;
      d["failed_elements"] = report.failed_elements;
      d["elements"] = report.elements;
      d["mismatch"] =
          report.mismatch == nullptr
              ? py::object(py::none())
              : py::object(py::str("output " + std::to_string(report.mismatch_output) + " has " + report.mismatch));
      d["atol"] = a;
      d["rtol"] = r;
      results.append(d);
    }
  }
  if (!only.is_none() && suites == 0) {
    throw std::runtime_error("the bundle has no test suite for method '" + only.cast<std::string>() + "'");
  }
  return results;
}

}  // namespace

void register_bundled(py::module_& m) {
  m.def("bundled_program_bytes", &program_bytes, py::arg("data"),
        "The .pte inside a .bpte's bytes, after checking the whole bundle.");
  m.def("verify_bundled", &verify, py::arg("data"), py::arg("atol") = py::none(), py::arg("rtol") = py::none(),
        py::arg("method") = py::none(),
        "Runs every test case of a .bpte on this runtime; one dict per case (passed, worst_error, where).");
}

}  // namespace python
}  // namespace ember
