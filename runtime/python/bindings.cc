// pybind11 module _ember_runtime (and _ember_runtime_portable, _ember_runtime_profiling: see BUILD.bazel): load a program (path or bytes), list and describe methods, run them on raw
// tensor buffers. ember/runtime.py wraps it with torch tensors.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/data_file/flat_tensor_file.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/python/pal_recording.h"
#include "runtime/runner/memory_claims.h"
#include "runtime/threads/posix_thread_pool.h"
#if EMBER_EVENT_TRACER
#include "runtime/devtools/buffer_event_tracer.h"
#include "runtime/devtools/etdump_writer.h"
#endif

namespace py = pybind11;

namespace ember {
namespace python {

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

// An int argument as int64, or a ValueError naming `what` (a Python int may exceed 64 bits).
int64_t as_int64(py::handle v, const std::string& what) {
  if (!py::isinstance<py::int_>(v))
    throw py::type_error(what + " must be an int, got " + std::string(py::str(py::repr(v))));
  try {
    return v.cast<int64_t>();
  } catch (const py::cast_error&) {
    throw py::value_error(what + " is " + std::string(py::str(v)) + ", which does not fit in 64 bits");
  }
}

py::dict tensor_info(const TensorInfo& t) {
  py::dict d;
  d["dtype"] = static_cast<int>(t.scalar_type);
  d["shape"] = std::vector<int32_t>(t.sizes.begin(), t.sizes.end());
  d["nbytes"] = t.nbytes;
  d["dynamic"] = t.is_dynamic;  // then "shape" holds each dimension's upper bound
  d["dim_order"] = std::vector<int>(t.dim_order.begin(), t.dim_order.end());
  return d;
}

class LoadedMethod {
 public:
  // A method with loops may not end by itself: at most n instructions per run (0: no limit).
  void set_instruction_limit(uint64_t n) { method_->set_instruction_limit(n); }
  bool has_loops() const { return method_->has_loops(); }

  LoadedMethod(const Program& program, const std::string& name, ThreadPool* threads, const ExternalData* data) {
    Result<MethodMeta> meta = program.method_meta(name.c_str());
    if (!meta.ok()) raise(("method '" + name + "'").c_str(), meta.error());
    // Every claim checked against the machine before any of it is allocated: a .pte is untrusted.
    MemoryClaims claims;
    char why[320];
    const int load_threads = threads != nullptr ? threads->threads() : 1;
    if (!read_memory_claims(meta.get(), physical_memory_bytes(), &claims, why, sizeof(why), load_threads)) {
      g_last_error[0] = '\0';
      throw std::runtime_error(std::string("loading method '") + name + "': " + why);
    }
    for (size_t p = 0; p < claims.num_pools; ++p) {
      const size_t size = claims.pool_bytes[p];
      pool_storage_.emplace_back(new Aligned(size));
      pools_.emplace_back(pool_storage_.back()->data(), size);
    }
    planned_.reset(new HierarchicalAllocator(Span<Span<uint8_t>>(pools_.data(), pools_.size())));
    method_storage_.reset(new Aligned(claims.method_allocator_bytes));
    method_alloc_.reset(new MemoryAllocator(method_storage_->data(), claims.method_allocator_bytes));
    // The kernels' scratch, exactly what MethodMeta predicts for the kernels linked here.
    temp_storage_.reset(new Aligned(claims.scratch_bytes));
    temp_alloc_.reset(new MemoryAllocator(temp_storage_->data(), claims.scratch_bytes));
    memory_ = MemoryManager{method_alloc_.get(), planned_.get(), temp_alloc_.get(), load_threads};
    Result<Method> m = program.load_method(name.c_str(), &memory_, data);
    if (!m.ok()) raise(("loading method '" + name + "'").c_str(), m.error());
    method_.reset(new Method(std::move(m.get())));
    method_->set_thread_pool(threads);
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
      Result<TensorInfo> t = meta->input_tensor_meta(i);
      input_dim_orders_.emplace_back();
      if (t.ok()) input_dim_orders_.back().assign(t->dim_order.begin(), t->dim_order.end());
    }
  }

  // Each input's dim order (empty for a non-tensor input): run() takes a tensor's bytes in that order, so
  // ember/runtime.py permutes a channels-last input's bytes before handing them over.
  const std::vector<std::vector<int>>& input_dim_orders() const { return input_dim_orders_; }

  // inputs: (buffer, dtype, shape) each, the bytes in the input's dim order; returns (bytes, dtype, shape,
  // dim order) per output, the bytes in that dim order. Anything else is refused
  // with the input's index, what was expected and what came (a TypeError or ValueError, never a crash).
  py::list run(const py::sequence& inputs) {
    // One call at a time on this copy: its inputs, planned memory and outputs are one run's.
    std::unique_lock<std::mutex> mine = hold();
    const std::string method = method_->name();
    if (static_cast<size_t>(py::len(inputs)) != method_->num_inputs()) {
      throw std::runtime_error("method '" + method + "' takes " + std::to_string(method_->num_inputs()) +
                               " inputs, got " + std::to_string(py::len(inputs)));
    }
    for (size_t i = 0; i < method_->num_inputs(); ++i) {
      const std::string what = "input " + std::to_string(i) + " of '" + method + "'";
      py::object item = inputs[i];
      if (!py::isinstance<py::tuple>(item) || py::len(item) != 3) {
        throw py::type_error(what + ": expected a (buffer, dtype code, shape) tuple, got " +
                             std::string(py::str(py::type::of(item).attr("__name__"))));
      }
      py::tuple t = item.cast<py::tuple>();
      if (!py::isinstance<py::buffer>(t[0])) {
        throw py::type_error(what + ": expected an object with the buffer protocol (bytes, a numpy array), got " +
                             std::string(py::str(py::type::of(t[0]).attr("__name__"))));
      }
      const int64_t code = as_int64(t[1], what + ": the dtype code");
      if (code < 0 || code >= kNumScalarTypes) {
        throw py::value_error(what + ": " + std::to_string(code) + " is not a ScalarType code");
      }
      const ScalarType type = static_cast<ScalarType>(code);
      if (!py::isinstance<py::sequence>(t[2])) throw py::type_error(what + ": the shape must be a sequence of ints");
      std::vector<int32_t> shape;
      for (py::handle d : t[2].cast<py::sequence>()) {
        const int64_t v = as_int64(d, what + ": dimension " + std::to_string(shape.size()));
        if (v < 0 || v > INT32_MAX) {
          throw py::value_error(what + ": dimension " + std::to_string(shape.size()) + " is " + std::to_string(v) +
                                "; a .pte dimension is in [0, 2^31)");
        }
        shape.push_back(static_cast<int32_t>(v));
      }
      // C-contiguous only: a strided view's bytes are not where ptr .. ptr + nbytes says.
      py::buffer_info info = t[0].cast<py::buffer>().request();
      ssize_t expect = info.itemsize;
      for (ssize_t d = info.ndim - 1; d >= 0; --d) {
        if (info.shape[static_cast<size_t>(d)] > 1 && info.strides[static_cast<size_t>(d)] != expect) {
          throw py::value_error(what + ": the buffer is not C-contiguous; pass a contiguous copy");
        }
        expect *= info.shape[static_cast<size_t>(d)];
      }
      Error e = method_->set_input(i, type, ArrayRef<int32_t>(shape.data(), shape.size()), info.ptr,
                                   static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize));
      if (e != Error::Ok) raise(what.c_str(), e);
    }
    Error e;
    {
      py::gil_scoped_release release;
      e = method_->execute();
    }
    if (e != Error::Ok) raise(("executing '" + std::string(method_->name()) + "'").c_str(), e);
    py::list outs;
    for (size_t i = 0; i < method_->num_outputs(); ++i) {
      Result<EValue> out = method_->output_value(i);
      if (!out.ok())
        raise(("output " + std::to_string(i) + " of '" + std::string(method_->name()) + "'").c_str(), out.error());
      // Scalars (a constant method's value, a computed size) come back as Python numbers.
      if (out->is_int()) {
        outs.append(py::int_(out->as_int()));
        continue;
      }
      if (out->is_double()) {
        outs.append(py::float_(out->as_double()));
        continue;
      }
      if (out->is_bool()) {
        outs.append(py::bool_(out->as_bool()));
        continue;
      }
      // Copied into a new bytes object while this call still holds the copy: the next run overwrites the
      // planned memory the output lives in.
      const Tensor& t = out->as_tensor();
      std::vector<int32_t> shape(t.sizes().begin(), t.sizes().end());
      std::vector<int> order(t.dim_order().begin(), t.dim_order().end());
      outs.append(py::make_tuple(py::bytes(static_cast<const char*>(t.const_data_ptr()), t.nbytes()),
                                 static_cast<int>(t.scalar_type()), shape, order));
    }
    return outs;
  }

  size_t method_allocator_used() const { return method_alloc_->used_bytes(); }

#if EMBER_EVENT_TRACER
  // Traces every later run into `capacity` records until profile_stop (the extension built with
  // --config=profiling only; ember/runtime.py's run(profile=True)).
  // `output_bytes` > 0 is debug mode: each kernel's output tensors are kept too, in a buffer of that size.
  void profile_start(size_t capacity, size_t output_bytes) {
    std::unique_lock<std::mutex> mine = hold();  // not while a run of this copy executes (the GIL is free then)
    trace_storage_.assign(capacity, TraceRecord{});
    debug_storage_.assign(output_bytes, 0);
    tracer_.reset(new BufferEventTracer(Span<TraceRecord>(trace_storage_.data(), trace_storage_.size()),
                                        Span<uint8_t>(debug_storage_.data(), debug_storage_.size())));
    method_->set_event_tracer(tracer_.get());
  }

  // (ETDump bytes, events kept, events dropped, debug buffer bytes, outputs dropped) of the runs since
  // profile_start, with allocation events when `allocations` (etdump_writer.h says why they are optional);
  // tracing stops.
  py::tuple profile_stop(bool allocations) {
    std::unique_lock<std::mutex> mine = hold();
    if (!tracer_) throw std::runtime_error("profile_stop without profile_start");
    method_->set_event_tracer(nullptr);
    OperatorNames names{method_.get(), [](const void* m, uint32_t op, const char** overload) {
                          return static_cast<const Method*>(m)->operator_name(op, overload);
                        }};
    const std::vector<uint8_t> etdump =
        write_etdump(tracer_->records(), tracer_->dropped(), method_->name(), names,
                     allocations ? EtdumpEvents::kProfileAndAllocations : EtdumpEvents::kProfile,
                     tracer_->debug_buffer());
    const ArrayRef<uint8_t> debug = tracer_->debug_buffer();
    py::tuple result = py::make_tuple(py::bytes(reinterpret_cast<const char*>(etdump.data()), etdump.size()),
                                      tracer_->records().size(), tracer_->dropped(),
                                      py::bytes(reinterpret_cast<const char*>(debug.data()), debug.size()),
                                      tracer_->dropped_outputs());
    tracer_.reset();
    trace_storage_.clear();
    debug_storage_.clear();
    return result;
  }
#endif

 private:
#if EMBER_EVENT_TRACER
  std::vector<TraceRecord> trace_storage_;
  std::vector<uint8_t> debug_storage_;
  std::unique_ptr<BufferEventTracer> tracer_;
#endif
  std::vector<std::unique_ptr<Aligned>> pool_storage_;
  std::vector<Span<uint8_t>> pools_;
  std::unique_ptr<HierarchicalAllocator> planned_;
  std::unique_ptr<Aligned> method_storage_, temp_storage_;
  std::unique_ptr<MemoryAllocator> method_alloc_, temp_alloc_;
  MemoryManager memory_;
  std::unique_ptr<Method> method_;
  std::vector<std::vector<int>> input_dim_orders_;
  // This copy for the caller alone, taken with the GIL held. If another call has it, the GIL is let go while
  // waiting: that call needs the GIL back to copy its outputs out, so holding it here would deadlock.
  std::unique_lock<std::mutex> hold() {
    std::unique_lock<std::mutex> mine(busy_, std::try_to_lock);
    if (!mine.owns_lock()) {
      py::gil_scoped_release release;
      mine.lock();
    }
    return mine;
  }

  std::mutex busy_;  // held by the call running this copy
};

// The loaded copies of one method, each with its own planned memory, scratch, kernel prepare state and delegate
// handles, lent to one call at a time: Python threads calling Program.run at once each execute on a copy of their
// own, with the GIL released. A copy is loaded only when every loaded one is busy, up to `limit`; past it a caller
// waits (GIL released) for one to come back. Copies are kept for the program's life, for the next burst of calls.
class MethodCopies {
 public:
  // Room for every copy up front: give_back runs in a destructor and must not allocate.
  MethodCopies(const std::string& name, size_t limit) : name_(name), limit_(limit) { idle_.reserve(limit); }

  // A copy for the caller alone until give_back: an idle one, a new one while fewer than `limit` are loaded, else
  // the first one another caller gives back. Called with the GIL held.
  std::unique_ptr<LoadedMethod> take(const Program& program, ThreadPool* threads, const ExternalData* data) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!idle_.empty()) {
          std::unique_ptr<LoadedMethod> m = std::move(idle_.back());
          idle_.pop_back();
          return m;
        }
        if (loaded_ < limit_) {
          ++loaded_;
          break;
        }
      }
      // The GIL is let go before the lock is taken again, and the lock before the GIL is taken back: a caller
      // holding one never waits for the other, so giving back (with or without the GIL) cannot deadlock.
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex_);
      returned_.wait(lock, [this] { return !idle_.empty() || loaded_ < limit_; });
    }
    try {
      return std::make_unique<LoadedMethod>(program, name_, threads, data);
    } catch (...) {
      forget_one();
      throw;
    }
  }

  void give_back(std::unique_ptr<LoadedMethod> m) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.push_back(std::move(m));
    }
    returned_.notify_one();
  }

  size_t loaded() {
    std::lock_guard<std::mutex> lock(mutex_);
    return loaded_;
  }
  size_t limit() const { return limit_; }

 private:
  void forget_one() {  // a load that failed: its place is free again
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --loaded_;
    }
    returned_.notify_one();
  }

  const std::string name_;
  const size_t limit_;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<LoadedMethod>> idle_;
  size_t loaded_ = 0;  // idle and lent
};

// A copy taken for one call, given back however the call ends (an exception included).
class Lease {
 public:
  Lease(MethodCopies& copies, const Program& program, ThreadPool* threads, const ExternalData* data)
      : copies_(copies), method_(copies.take(program, threads, data)) {}
  ~Lease() { copies_.give_back(std::move(method_)); }
  LoadedMethod* operator->() { return method_.get(); }

 private:
  MethodCopies& copies_;
  std::unique_ptr<LoadedMethod> method_;
};

// A .ptd, mapped once (MmapDataLoader: the flatbuffer and the segment data, one mapping each) and checked whole
// on open. Programs hold it by shared_ptr: any number of them, and every method of each, point into its pages.
class DataFile {
 public:
  explicit DataFile(const std::string& path) : path_(path) {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
    if (!loader.ok()) raise(("opening " + path).c_str(), loader.error());
    loader_.reset(new MmapDataLoader(std::move(loader.get())));
    Result<FlatTensorFile> f = FlatTensorFile::load(loader_.get());
    if (!f.ok()) raise(("reading the data file " + path).c_str(), f.error());
    file_.reset(new FlatTensorFile(std::move(f.get())));
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < file_->num_entries(); ++i) out.emplace_back(file_->key(i).get());
    return out;
  }
  // Entry `key`'s bytes, copied (for tests and tools; methods read them in place).
  py::bytes read(const std::string& key) const {
    Result<ArrayRef<uint8_t>> b = file_->find(key.c_str());
    if (!b.ok()) raise(("'" + key + "' in " + path_).c_str(), b.error());
    return py::bytes(reinterpret_cast<const char*>(b->data()), b->size());
  }
  size_t segment_bytes() const { return file_->segment_bytes(); }
  const std::string& path() const { return path_; }
  const ExternalData* data() const { return file_.get(); }

 private:
  std::string path_;
  std::unique_ptr<MmapDataLoader> loader_;
  std::unique_ptr<FlatTensorFile> file_;
};

class LoadedProgram {
 public:
  // From bytes, copied into an aligned buffer of the program's own.
  LoadedProgram(const std::string& data, int threads, int copies) : storage_(data.size()), copies_(copies) {
    check_copies(copies);
    start_threads(threads);
    memcpy(storage_.data(), data.data(), data.size());
    buffer_loader_.reset(new BufferDataLoader(storage_.data(), data.size()));
    load(buffer_loader_.get());
  }

  // From a file, mapped (the runner's loader): weights stay file-backed pages, read when first touched and never
  // copied, so a 650 MB decoder costs its pages once, not a Python bytes object plus an aligned copy besides.
  static std::unique_ptr<LoadedProgram> from_file(const std::string& path, int threads, int copies) {
    check_copies(copies);
    std::unique_ptr<LoadedProgram> p(new LoadedProgram(copies));
    p->start_threads(threads);
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
    if (!loader.ok()) raise(("opening " + path).c_str(), loader.error());
    p->mmap_loader_.reset(new MmapDataLoader(std::move(loader.get())));
    p->load(p->mmap_loader_.get());
    return p;
  }

  std::vector<std::string> methods() const {
    std::vector<std::string> names;
    for (size_t i = 0; i < program_->num_methods(); ++i) {
      Result<const char*> name = program_->get_method_name(i);
      if (!name.ok()) raise(("the name of method " + std::to_string(i)).c_str(), name.error());
      names.emplace_back(name.get());
    }
    return names;
  }

  py::dict method_meta(const std::string& name) const {
    Result<MethodMeta> meta = program_->method_meta(name.c_str());
    if (!meta.ok()) raise(("method '" + name + "'").c_str(), meta.error());
    py::dict d;
    py::list ins, outs, pools;
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
      Result<TensorInfo> t = meta->input_tensor_meta(i);
      if (!t.ok()) raise(("input " + std::to_string(i) + " of '" + name + "'").c_str(), t.error());
      ins.append(tensor_info(t.get()));
    }
    for (size_t i = 0; i < meta->num_outputs(); ++i) {
      Result<Tag> tag = meta->output_tag(i);
      if (tag.ok() && tag.get() != Tag::Tensor) {
        py::dict scalar;
        scalar["kind"] = tag_name(tag.get());
        outs.append(scalar);
        continue;
      }
      Result<TensorInfo> t = meta->output_tensor_meta(i);
      if (!t.ok()) raise(("output " + std::to_string(i) + " of '" + name + "'").c_str(), t.error());
      outs.append(tensor_info(t.get()));
    }
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
      Result<size_t> size = meta->memory_planned_buffer_size(i);
      if (!size.ok()) raise(("pool " + std::to_string(i + 1) + " of '" + name + "'").c_str(), size.error());
      pools.append(size.get());
    }
    d["inputs"] = ins;
    d["outputs"] = outs;
    d["planned_pools"] = pools;
    d["method_allocator_bytes"] = meta->method_allocator_bytes();
    d["scratch_bytes"] = meta->scratch_bytes();
    // What a load with this program's pool takes (the same unless a kernel gives each thread its own scratch).
    d["threaded_scratch_bytes"] = meta->scratch_bytes(threads());
    d["num_instructions"] = meta->num_instructions();
    return d;
  }

  std::unique_ptr<LoadedMethod> load_method(const std::string& name) {
    return std::make_unique<LoadedMethod>(*program_, name, pool_, external());
  }

  // Runs `name` on a copy of its own (MethodCopies): safe from any number of threads at once.
  py::list run(const std::string& name, const py::sequence& inputs, uint64_t instruction_limit) {
    Lease method(copies_of(name), *program_, pool_, external());
    method->set_instruction_limit(instruction_limit);
    return method->run(inputs);
  }

  // Each input's dim order (empty for a non-tensor input), as LoadedMethod::input_dim_orders gives it.
  std::vector<std::vector<int>> input_dim_orders(const std::string& name) const {
    Result<MethodMeta> meta = program_->method_meta(name.c_str());
    if (!meta.ok()) raise(("method '" + name + "'").c_str(), meta.error());
    std::vector<std::vector<int>> orders(meta->num_inputs());
    for (size_t i = 0; i < orders.size(); ++i) {
      Result<TensorInfo> t = meta->input_tensor_meta(i);
      if (t.ok()) orders[i].assign(t->dim_order.begin(), t->dim_order.end());
    }
    return orders;
  }

  // (copies loaded, most it may load) of method `name`: 1 most for a method with mutable buffers.
  std::pair<size_t, size_t> copies(const std::string& name) {
    MethodCopies& c = copies_of(name);
    return {c.loaded(), c.limit()};
  }
  int threads() const { return pool_ != nullptr ? pool_->threads() : 1; }

  // The .ptd files its external tensors are found in, asked in order; set before any method loads (a loaded
  // method points into the files it loaded with).
  void set_data_files(const std::vector<std::shared_ptr<DataFile>>& files) {
    {
      std::lock_guard<std::mutex> lock(methods_mutex_);
      if (!methods_.empty()) throw std::runtime_error("set_data_files: methods of this program are already loaded");
    }
    data_files_ = files;
    data_ptrs_.clear();
    for (const auto& f : files) {
      if (f == nullptr) throw py::value_error("set_data_files: a data file is None");
      data_ptrs_.push_back(f->data());
    }
    data_list_.reset(new ExternalDataList(data_ptrs_.data(), data_ptrs_.size()));
  }
  ~LoadedProgram() { PosixThreadPool::destroy(pool_); }  // after its methods: load_method keeps the program alive

 private:
  explicit LoadedProgram(int copies) : storage_(0), copies_(copies) {}
  static void check_copies(int copies) {
    if (copies < 1) throw py::value_error("copies=" + std::to_string(copies) + ": at least 1 copy of a method");
  }
  // A method with mutable buffers keeps state from call to call (a KV cache), and each copy would keep its own:
  // one copy, so calls run one at a time on the one state, in the order they take it.
  MethodCopies& copies_of(const std::string& name) {
    std::lock_guard<std::mutex> lock(methods_mutex_);
    auto it = methods_.find(name);
    if (it != methods_.end()) return *it->second;
    Result<MethodMeta> meta = program_->method_meta(name.c_str());
    if (!meta.ok()) raise(("method '" + name + "'").c_str(), meta.error());
    const size_t limit = meta->num_mutable_buffers() > 0 ? 1 : static_cast<size_t>(copies_);
    return *methods_.emplace(name, std::make_unique<MethodCopies>(name, limit)).first->second;
  }
  void start_threads(int threads) {
    if (threads <= 1) return;
    Result<PosixThreadPool*> pool = PosixThreadPool::create(threads);
    if (!pool.ok()) raise(("starting " + std::to_string(threads) + " threads").c_str(), pool.error());
    pool_ = pool.get();
  }
  void load(DataLoader* loader) {
    Result<Program> p = Program::load(loader);
    if (!p.ok()) raise("loading the program", p.error());
    program_.reset(new Program(std::move(p.get())));
  }

  const ExternalData* external() const { return data_list_.get(); }

  PosixThreadPool* pool_ = nullptr;
  Aligned storage_;
  std::vector<std::shared_ptr<DataFile>> data_files_;  // kept alive while this program's methods point into them
  std::vector<const ExternalData*> data_ptrs_;
  std::unique_ptr<ExternalDataList> data_list_;
  // One of the two (loaders are never deleted through DataLoader).
  std::unique_ptr<BufferDataLoader> buffer_loader_;
  std::unique_ptr<MmapDataLoader> mmap_loader_;
  std::unique_ptr<Program> program_;
  const int copies_;  // most copies of each method loaded at once (calls running at once)
  std::mutex methods_mutex_;
  std::map<std::string, std::unique_ptr<MethodCopies>> methods_;  // declared last: destroyed before the program
};

}  // namespace

// bundled_bindings.cc: .bpte verification.
void register_bundled(py::module_& m);

}  // namespace python
}  // namespace ember

PYBIND11_MODULE(EMBER_PY_MODULE, m) {
  using namespace ember::python;
  m.doc() = "Ember runtime: load .pte programs and run their methods (see ember.runtime).";
  // module_local: the default, portable and profiling extensions each keep their own classes in one process (shared,
  // the second one loaded would construct the first one's objects, with its kernels).
  py::class_<LoadedMethod>(m, "Method", py::module_local())
      .def("run", &LoadedMethod::run)
      .def("set_instruction_limit", &LoadedMethod::set_instruction_limit, py::arg("n"))
      .def("has_loops", &LoadedMethod::has_loops)
      .def("input_dim_orders", &LoadedMethod::input_dim_orders)
#if EMBER_EVENT_TRACER
      .def("profile_start", &LoadedMethod::profile_start, py::arg("capacity"), py::arg("output_bytes") = 0)
      .def("profile_stop", &LoadedMethod::profile_stop, py::arg("allocations") = false)
#endif
      .def_property_readonly("method_allocator_used", &LoadedMethod::method_allocator_used);
  py::class_<LoadedProgram>(m, "Program", py::module_local())
      .def(py::init<const std::string&, int, int>(), py::arg("data"), py::arg("threads") = 1, py::arg("copies") = 1)
      .def_static("from_file", &LoadedProgram::from_file, py::arg("path"), py::arg("threads") = 1,
                  py::arg("copies") = 1)
      .def("threads", &LoadedProgram::threads)
      .def("run", &LoadedProgram::run, py::arg("method"), py::arg("inputs"), py::arg("instruction_limit") = 0)
      .def("copies", &LoadedProgram::copies, py::arg("method"))
      .def("input_dim_orders", &LoadedProgram::input_dim_orders, py::arg("method"))
      .def("methods", &LoadedProgram::methods)
      .def("method_meta", &LoadedProgram::method_meta)
      .def("set_data_files", &LoadedProgram::set_data_files, py::arg("files"))
      .def("load_method", &LoadedProgram::load_method, py::keep_alive<0, 1>());
  py::class_<DataFile, std::shared_ptr<DataFile>>(m, "DataFile", py::module_local())
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("keys", &DataFile::keys)
      .def("read", &DataFile::read, py::arg("key"))
      .def_property_readonly("segment_bytes", &DataFile::segment_bytes)
      .def_property_readonly("path", &DataFile::path);
  register_bundled(m);
}
