// ExecuTorch's side of the benchmark, in C++: the same measurement loop as Ember's runner (runtime/runner), on the
// C++ runtime that the executorch==1.5.1 wheel ships (lib/libexecutorch.so, its CPU kernel library and its
// XNNPACK backend), so both runtimes are timed by the same clock around the same call, with no Python between.
//
//   et_runner MODEL.pte [--input FILE]... [--runs N] [--warmup N] [--threads N] [--output-dir DIR]
//
// Built by bench/ (bench/build.py) with g++ against the wheel's headers and shared libraries. Kernels and the
// XNNPACK backend register themselves when their libraries load. --threads sets ExecuTorch's threadpool (used by
// XNNPACK and the optimized kernels); the benchmark passes 1. Prints lines in the format of Ember's runner:
//   memory: pool P: B bytes planned / memory: method allocator: B bytes used / time: ... / time: load ...
// Exit codes as Ember's runner: 2 usage, 3 program or method refused, 4 input refused, 5 execution failed,
// 6 an output could not be written.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include <executorch/extension/data_loader/mmap_data_loader.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

// The wheel ships no threadpool.h; this is the one member the driver calls, declared as the library defines it.
namespace executorch {
namespace extension {
namespace threadpool {
class ThreadPool {
 public:
  bool _unsafe_reset_threadpool(uint32_t num_threads);
  size_t get_thread_count() const;
};
ThreadPool* get_threadpool();
}  // namespace threadpool
}  // namespace extension
}  // namespace executorch

namespace rt = executorch::runtime;
using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::aten::TensorImpl;
using executorch::extension::MmapDataLoader;

namespace {

uint64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void* aligned(size_t bytes) { return aligned_alloc(16, (bytes + 15) / 16 * 16 + 16); }

int usage(const char* argv0) {
  fprintf(stderr, "usage: %s MODEL.pte [--input FILE]... [--runs N] [--warmup N] [--threads N] [--output-dir DIR]\n",
          argv0);
  return 2;
}

// One input: its bytes (read once from a raw file) and a TensorImpl over them with the method's shape.
struct Input {
  std::vector<uint8_t> bytes;
  std::vector<TensorImpl::SizesType> sizes;
  std::vector<TensorImpl::DimOrderType> dim_order;
  ScalarType type;
};

}  // namespace

int main(int argc, char** argv) {
  const char* model = nullptr;
  const char* output_dir = nullptr;
  std::vector<const char*> input_files;
  int runs = 1, warmup = 0, threads = 1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const bool has_value = i + 1 < argc;
    if (strcmp(a, "--input") == 0 && has_value) {
      input_files.push_back(argv[++i]);
    } else if (strcmp(a, "--runs") == 0 && has_value) {
      runs = atoi(argv[++i]);
    } else if (strcmp(a, "--warmup") == 0 && has_value) {
      warmup = atoi(argv[++i]);
    } else if (strcmp(a, "--threads") == 0 && has_value) {
      threads = atoi(argv[++i]);
    } else if (strcmp(a, "--output-dir") == 0 && has_value) {
      output_dir = argv[++i];
    } else if (a[0] == '-' || model != nullptr) {
      return usage(argv[0]);
    } else {
      model = a;
    }
  }
  if (model == nullptr || runs < 1 || warmup < 0 || threads < 1) return usage(argv[0]);

  rt::runtime_init();
  executorch::extension::threadpool::ThreadPool* pool = executorch::extension::threadpool::get_threadpool();
  if (pool == nullptr || !pool->_unsafe_reset_threadpool(static_cast<uint32_t>(threads))) {
    fprintf(stderr, "et_runner: cannot set the threadpool to %d threads\n", threads);
    return 2;
  }

  // Load: from opening the file to a loaded method, the span Ember's runner reports as its load time.
  const uint64_t load_t0 = now_ns();
  rt::Result<MmapDataLoader> loader = MmapDataLoader::from(model, MmapDataLoader::MlockConfig::NoMlock);
  if (!loader.ok()) {
    fprintf(stderr, "et_runner: cannot read %s\n", model);
    return 3;
  }
  rt::Result<rt::Program> program = rt::Program::load(&loader.get());
  if (!program.ok()) {
    fprintf(stderr, "et_runner: %s is not a loadable program (error 0x%x)\n", model,
            static_cast<unsigned>(program.error()));
    return 3;
  }
  const char* method_name = "forward";
  rt::Result<rt::MethodMeta> meta = program->method_meta(method_name);
  if (!meta.ok()) {
    fprintf(stderr, "et_runner: no method 'forward' in %s\n", model);
    return 3;
  }
  const size_t num_pools = meta->num_memory_planned_buffers();
  std::vector<rt::Span<uint8_t>> pools;
  for (size_t p = 0; p < num_pools; ++p) {
    const size_t size = static_cast<size_t>(*meta->memory_planned_buffer_size(p));
    pools.emplace_back(static_cast<uint8_t*>(aligned(size)), size);
  }
  rt::HierarchicalAllocator planned({pools.data(), pools.size()});
  // ExecuTorch predicts no method-allocator size; a generous buffer (untouched pages cost no memory) and the bytes
  // it really used are reported.
  const uint32_t method_pool = 64u << 20, temp_pool = 1u << 20;
  rt::MemoryAllocator method_alloc(method_pool, static_cast<uint8_t*>(aligned(method_pool)));
  rt::MemoryAllocator temp_alloc(temp_pool, static_cast<uint8_t*>(aligned(temp_pool)));
  rt::MemoryManager memory(&method_alloc, &planned, &temp_alloc);
  const uint64_t method_t0 = now_ns();
  rt::Result<rt::Method> method = program->load_method(method_name, &memory);
  const uint64_t load_t1 = now_ns();
  if (!method.ok()) {
    fprintf(stderr, "et_runner: method 'forward' did not load (error 0x%x)\n", static_cast<unsigned>(method.error()));
    return 3;
  }

  // Inputs: raw little-endian files, one per tensor input, sized from MethodMeta.
  const size_t num_inputs = method->inputs_size();
  std::vector<Input> inputs(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    rt::Result<rt::TensorInfo> info = meta->input_tensor_meta(i);
    if (!info.ok() || i >= input_files.size()) {
      fprintf(stderr, "et_runner: input %zu: %s\n", i, info.ok() ? "no --input file given" : "not a tensor");
      return 4;
    }
    Input& in = inputs[i];
    in.type = info->scalar_type();
    for (int32_t s : info->sizes()) in.sizes.push_back(s);
    for (uint8_t d : info->dim_order()) in.dim_order.push_back(d);
    in.bytes.resize(info->nbytes());
    FILE* f = fopen(input_files[i], "rb");
    const size_t got = f ? fread(in.bytes.data(), 1, in.bytes.size(), f) : 0;
    const bool extra = f && fgetc(f) != EOF;
    if (f) fclose(f);
    if (got != in.bytes.size() || extra) {
      fprintf(stderr, "et_runner: input %zu needs exactly %zu bytes from %s\n", i, in.bytes.size(), input_files[i]);
      return 4;
    }
  }

  std::vector<uint64_t> times(static_cast<size_t>(runs));
  uint64_t total = 0, best = UINT64_MAX;
  for (int r = -warmup; r < runs; ++r) {
    // As in Ember's runner, inputs are set before every run (outside the timer): a plan may reuse their bytes.
    for (size_t i = 0; i < num_inputs; ++i) {
      Input& in = inputs[i];
      TensorImpl impl(in.type, static_cast<ssize_t>(in.sizes.size()), in.sizes.data(), in.bytes.data(),
                      in.dim_order.data());
      rt::Error e = method->set_input(rt::EValue(Tensor(&impl)), i);
      if (e != rt::Error::Ok) {
        fprintf(stderr, "et_runner: input %zu refused (error 0x%x)\n", i, static_cast<unsigned>(e));
        return 4;
      }
    }
    const uint64_t t0 = now_ns();
    rt::Error e = method->execute();
    const uint64_t dt = now_ns() - t0;
    if (e != rt::Error::Ok) {
      fprintf(stderr, "et_runner: run %d failed (error 0x%x)\n", r, static_cast<unsigned>(e));
      return 5;
    }
    if (r < 0) continue;
    times[static_cast<size_t>(r)] = dt;
    total += dt;
    best = dt < best ? dt : best;
  }

  printf("program: %s, method 'forward': %zu instructions, %zu inputs, %zu outputs, %zu threads\n", model,
         static_cast<size_t>(meta->num_instructions()), num_inputs, method->outputs_size(), pool->get_thread_count());
  for (size_t p = 0; p < num_pools; ++p) printf("memory: pool %zu: %zu bytes planned\n", p + 1, pools[p].size());
  printf("memory: method allocator: %zu bytes used\n", method_alloc.used_size());
  printf("time: %d runs, mean %.1f us, min %.1f us\n", runs, static_cast<double>(total) / runs / 1000.0,
         static_cast<double>(best) / 1000.0);
  std::vector<uint64_t> sorted = times;
  qsort(sorted.data(), sorted.size(), sizeof(uint64_t), [](const void* a, const void* b) {
    const uint64_t x = *static_cast<const uint64_t*>(a), y = *static_cast<const uint64_t*>(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
  auto rank = [&](int percent) { return sorted[(sorted.size() * percent + 99) / 100 - 1]; };
  printf("time: %d warm-up runs, min %.3f us, median %.3f us, p90 %.3f us\n", warmup,
         static_cast<double>(sorted[0]) / 1000.0, static_cast<double>(rank(50)) / 1000.0,
         static_cast<double>(rank(90)) / 1000.0);
  printf("time: load %.3f us (program and buffers %.3f us, load_method %.3f us)\n",
         static_cast<double>(load_t1 - load_t0) / 1000.0, static_cast<double>(method_t0 - load_t0) / 1000.0,
         static_cast<double>(load_t1 - method_t0) / 1000.0);

  for (size_t i = 0; i < method->outputs_size(); ++i) {
    const rt::EValue& v = method->get_output(i);
    if (!v.isTensor()) continue;
    const Tensor t = v.toTensor();
    if (output_dir != nullptr) {
      char path[1024];
      snprintf(path, sizeof(path), "%s/output_%zu.bin", output_dir, i);
      FILE* f = fopen(path, "wb");
      if (f == nullptr || fwrite(t.const_data_ptr(), 1, t.nbytes(), f) != t.nbytes()) {
        fprintf(stderr, "et_runner: cannot write %s\n", path);
        if (f) fclose(f);
        return 6;
      }
      fclose(f);
    }
  }
  return 0;
}
