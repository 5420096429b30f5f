// pybind11 module _ember_runtime: load a program (path or bytes), list and describe methods, run them on raw
// tensor buffers. ember/runtime.py wraps it with torch tensors.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace py = pybind11;

namespace ember {
namespace python {
extern char g_last_error[512];

namespace {

[[noreturn]] void raise(const char* what, Error e) {
  std::string msg = std::string(what) + ": " + error_name(e);
  if (g_last_error[0] != '\0') msg += " (" + std::string(g_last_error) + ")";
  g_last_error[0] = '\0';
  throw std::runtime_error(msg);
}

// 16-byte-aligned storage, as MethodMeta's byte counts assume.
struct Aligned {
  std::vector<uint64_t> words;
  explicit Aligned(size_t bytes) : words((bytes + 15) / 8 + 2) {}
  uint8_t* data() {
    uintptr_t p = reinterpret_cast<uintptr_t>(words.data());
    return reinterpret_cast<uint8_t*>((p + 15) & ~static_cast<uintptr_t>(15));
  }
};

py::dict tensor_info(const TensorInfo& t) {
  py::dict d;
  d["dtype"] = static_cast<int>(t.scalar_type);
  d["shape"] = std::vector<int32_t>(t.sizes.begin(), t.sizes.end());
  d["nbytes"] = t.nbytes;
  return d;
}

class LoadedMethod {
 public:
  LoadedMethod(const Program& program, const std::string& name) {
    Result<MethodMeta> meta = program.method_meta(name.c_str());
    if (!meta.ok()) raise(("method '" + name + "'").c_str(), meta.error());
    for (size_t p = 0; p < meta->num_memory_planned_buffers(); ++p) {
      const size_t size = *meta->memory_planned_buffer_size(p);
      pool_storage_.emplace_back(new Aligned(size));
      pools_.emplace_back(pool_storage_.back()->data(), size);
    }
    planned_.reset(new HierarchicalAllocator(Span<Span<uint8_t>>(pools_.data(), pools_.size())));
    method_storage_.reset(new Aligned(meta->method_allocator_bytes()));
    method_alloc_.reset(new MemoryAllocator(method_storage_->data(), meta->method_allocator_bytes()));
    temp_storage_.reset(new Aligned(kTempBytes));
    temp_alloc_.reset(new MemoryAllocator(temp_storage_->data(), kTempBytes));
    memory_ = MemoryManager{method_alloc_.get(), planned_.get(), temp_alloc_.get()};
    Result<Method> m = program.load_method(name.c_str(), &memory_);
    if (!m.ok()) raise(("loading method '" + name + "'").c_str(), m.error());
    method_.reset(new Method(std::move(m.get())));
  }

  // inputs: (buffer, dtype, shape) each; returns (bytes, dtype, shape) per output.
  py::list run(const std::vector<std::tuple<py::buffer, int, std::vector<int32_t>>>& inputs) {
    if (inputs.size() != method_->num_inputs()) {
      throw std::runtime_error("method '" + std::string(method_->name()) + "' takes " +
                               std::to_string(method_->num_inputs()) + " inputs, got " + std::to_string(inputs.size()));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      py::buffer_info info = std::get<0>(inputs[i]).request();
      const std::vector<int32_t>& shape = std::get<2>(inputs[i]);
      Error e = method_->set_input(i, static_cast<ScalarType>(std::get<1>(inputs[i])),
                                   ArrayRef<int32_t>(shape.data(), shape.size()), info.ptr,
                                   static_cast<size_t>(info.size * info.itemsize));
      if (e != Error::Ok) raise(("input " + std::to_string(i)).c_str(), e);
    }
    Error e;
    {
      py::gil_scoped_release release;
      e = method_->execute();
    }
    if (e != Error::Ok) raise(("executing '" + std::string(method_->name()) + "'").c_str(), e);
    py::list outs;
    for (size_t i = 0; i < method_->num_outputs(); ++i) {
      Tensor t = *method_->output(i);
      std::vector<int32_t> shape(t.sizes().begin(), t.sizes().end());
      outs.append(py::make_tuple(py::bytes(static_cast<const char*>(t.const_data_ptr()), t.nbytes()),
                                 static_cast<int>(t.scalar_type()), shape));
    }
    return outs;
  }

  size_t method_allocator_used() const { return method_alloc_->used_bytes(); }

 private:
  static constexpr size_t kTempBytes = 1 << 20;
  std::vector<std::unique_ptr<Aligned>> pool_storage_;
  std::vector<Span<uint8_t>> pools_;
  std::unique_ptr<HierarchicalAllocator> planned_;
  std::unique_ptr<Aligned> method_storage_, temp_storage_;
  std::unique_ptr<MemoryAllocator> method_alloc_, temp_alloc_;
  MemoryManager memory_;
  std::unique_ptr<Method> method_;
};

class LoadedProgram {
 public:
  explicit LoadedProgram(const std::string& data) : storage_(data.size()) {
    memcpy(storage_.data(), data.data(), data.size());
    loader_.reset(new BufferDataLoader(storage_.data(), data.size()));
    Result<Program> p = Program::load(loader_.get());
    if (!p.ok()) raise("loading the program", p.error());
    program_.reset(new Program(std::move(p.get())));
  }

  std::vector<std::string> methods() const {
    std::vector<std::string> names;
    for (size_t i = 0; i < program_->num_methods(); ++i) names.emplace_back(*program_->get_method_name(i));
    return names;
  }

  py::dict method_meta(const std::string& name) const {
    Result<MethodMeta> meta = program_->method_meta(name.c_str());
    if (!meta.ok()) raise(("method '" + name + "'").c_str(), meta.error());
    py::dict d;
    py::list ins, outs, pools;
    for (size_t i = 0; i < meta->num_inputs(); ++i) ins.append(tensor_info(*meta->input_tensor_meta(i)));
    for (size_t i = 0; i < meta->num_outputs(); ++i) outs.append(tensor_info(*meta->output_tensor_meta(i)));
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) pools.append(*meta->memory_planned_buffer_size(i));
    d["inputs"] = ins;
    d["outputs"] = outs;
    d["planned_pools"] = pools;
    d["method_allocator_bytes"] = meta->method_allocator_bytes();
    d["num_instructions"] = meta->num_instructions();
    return d;
  }

  std::unique_ptr<LoadedMethod> load_method(const std::string& name) { return std::make_unique<LoadedMethod>(*program_, name); }

 private:
  Aligned storage_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
};

}  // namespace
}  // namespace python
}  // namespace ember

PYBIND11_MODULE(_ember_runtime, m) {
  using namespace ember::python;
  m.doc() = "Ember runtime: load .pte programs and run their methods (see ember.runtime).";
  py::class_<LoadedMethod>(m, "Method")
      .def("run", &LoadedMethod::run)
      .def_property_readonly("method_allocator_used", &LoadedMethod::method_allocator_used);
  py::class_<LoadedProgram>(m, "Program")
      .def(py::init<const std::string&>(), py::arg("data"))
      .def("methods", &LoadedProgram::methods)
      .def("method_meta", &LoadedProgram::method_meta)
      .def("load_method", &LoadedProgram::load_method, py::keep_alive<0, 1>());
}
