// ember runner: loads a .pte, fills its inputs, runs a method N times, prints outputs, memory and time.
//
//   runner MODEL.pte [--method NAME] [--input SPEC]... [--runs N] [--warmup N] [--output-dir DIR] [--print N]
//          [--instruction-limit N]  (a method with loops stops with exit 5 after N instructions a run; default
//                                    100M, 0 for none)
//          [--threads N]  (kernels/optimized's kernels split their work over N threads, the caller's included;
//                          default 1. Builds without the optimized kernels, such as --config=size, have no pool
//                          and no such flag: size reports measure the single-threaded runner)
//   SPEC: zeros | ones | random[:SEED] | PATH (raw little-endian bytes of the whole input tensor), optionally
//         followed by @[d0,d1,...]: the shape of a bounded dynamic input for this run (random:1@[1,37])
//
// Built with the event tracer (`bazel build //:runner --config=profiling`), it also takes --profile OUT.etdp
// [--profile-events N] [--profile-memory]: every timed run traced per instruction into N records (default: enough
// for every instruction and allocation of every run), written as ETDump (runtime/devtools/etdump_writer.h); exit 6
// if it cannot be written. --profile-memory adds each run's allocation events (the bytes it ran in, per allocator),
// which ExecuTorch 1.5.1's Inspector cannot read; devtools.profile can. --profile-outputs FILE [--profile-output-bytes
// N] is debug mode: each kernel's output tensors are kept too, in an N-byte buffer (default 64 MiB) written to
// FILE, which the ETDump's debug events point into (ExecuTorch's Inspector takes it as debug_buffer_path).
//
// Compiled per selection (runtime/runner/defs.bzl): a runner whose selection leaves out control flow or scalar
// outputs ("ember/selected_features.h") has no --instruction-limit or printing of scalar outputs either, as its
// runtime refuses programs that need them. (Every runner reads @[SHAPE]: a static input may be given its own.)
//
// Exit codes: 0 ok, 2 bad usage, 3 the program or method did not load, 4 an input was refused, 5 execution
// failed, 6 an output could not be written. Every buffer is sized from MethodMeta before loading: the method
// allocator gets exactly method_allocator_bytes(), and the runner reports what was used against it. A program
// claiming more than the machine's memory is refused (exit 3) before any of it is allocated.
//
// Timing: --warmup N untimed executions first, then --runs N timed ones (inputs are set before each, outside
// the timer). It prints mean/min, then min/median/p90 (nearest rank) to the ns, and the load time: from opening
// the file to a loaded method (program load, buffer allocation, method load), as one load would cost on a device.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/selected_features.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/platform/platform.h"
#include "runtime/runner/fill.h"
#include "runtime/runner/host_memory.h"
#include "runtime/runner/memory_claims.h"
#if EMBER_RUNNER_THREADS
#include "runtime/threads/posix_thread_pool.h"
#endif
#if EMBER_EVENT_TRACER
#include "runtime/devtools/buffer_event_tracer.h"
#include "runtime/devtools/etdump_writer.h"
#endif
#if EMBER_RUNNER_VERIFY
#include "runtime/runner/verify.h"
#endif

using namespace ember;
using namespace ember::selected_features;

namespace {

constexpr int kMaxInputs = 16;

struct Options {
  const char* model = nullptr;
  const char* method = "forward";
  const char* inputs[kMaxInputs];
  int num_inputs = 0;
  int runs = 1;
  int warmup = 0;
  int print = 8;
  const char* output_dir = nullptr;
  // Instructions per run in a method with loops; past it the run fails instead of hanging.
  long long instruction_limit = 100000000;
#if EMBER_RUNNER_THREADS
  int threads = 1;
#endif
#if EMBER_EVENT_TRACER
  const char* profile = nullptr;
  long long profile_events = 0;  // 0: (instructions + allocations + 1) x runs
  bool profile_memory = false;
  const char* profile_outputs = nullptr;
  long long profile_output_bytes = 64LL << 20;
#endif
};

int usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s MODEL.pte [--method NAME] [--input zeros|ones|random[:SEED]|FILE[@[SHAPE]]]... "
          "[--runs N]\n       [--warmup N] [--output-dir DIR] [--print N]%s"
#if EMBER_RUNNER_THREADS
          " [--threads N]"
#endif
          "\n",
          argv0, kControlFlow ? " [--instruction-limit N]" : "");
  return 2;
}

// A whole decimal number in [lo, hi] (atoi would take "12abc" as 12 and "x" as 0).
bool parse_int(const char* text, long lo, long hi, int* out) {
  char* end = nullptr;
  const long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

void* aligned(size_t bytes) {
  // 16-byte alignment: what MethodMeta's byte counts assume, and enough for every tensor type.
  if (bytes > SIZE_MAX - 32) return nullptr;
  return host_aligned_alloc(16, (bytes + 15) / 16 * 16 + 16);
}

// The runner's own buffers, freed on every way out of main (leak checkers run the runner too).
struct Owned {
  void* blocks[MemoryClaims::kMaxPools + 3] = {};
  size_t count = 0;
  void* keep(void* p) { return p != nullptr ? blocks[count++] = p : nullptr; }
  ~Owned() {
    for (size_t i = 0; i < count; ++i) host_aligned_free(blocks[i]);
  }
};

Error fill_input(Method& method, size_t index, const char* full_spec) {
  // "SPEC@[d0,d1,...]" gives a bounded dynamic input its shape for this run; without it the input keeps the
  // shape it has (the bound, before the first run). A static input's shape must be its own.
  char spec[1024];
  int32_t shape[kMaxTensorDim];
  int rank = -1;
  if (!parse_input_spec(full_spec, spec, sizeof(spec), shape, kMaxTensorDim, &rank)) {
    fprintf(stderr, "runner: input %zu: cannot read the shape in '%s' (write e.g. random@[1,37])\n", index, full_spec);
    return Error::InvalidArgument;
  }
  // The shape first: checked against the plan (naming the dimension and bound it breaks) before any buffer is
  // allocated for it.
  if (rank >= 0) {
    const Error e = method.resize_input(index, ArrayRef<int32_t>(shape, static_cast<size_t>(rank)));
    if (e != Error::Ok) return e;
  }
  Result<Tensor> t = method.input(index);
  if (!t.ok()) return t.error();
  const ScalarType st = t->scalar_type();
  const size_t nbytes = t->nbytes();
  const int64_t n = t->numel();
  uint8_t* buf = static_cast<uint8_t*>(aligned(nbytes));
  if (buf == nullptr) {
    fprintf(stderr, "runner: cannot allocate %zu bytes for input %zu (%s [%lld elements])\n", nbytes, index,
            scalar_type_name(st), static_cast<long long>(n));
    return Error::MemoryAllocationFailed;
  }
  if (is_generated_spec(spec)) {
    // The same generator as every other runner (runtime/runner/fill.h), so targets can be compared.
    if (fill_generated(st, buf, n, spec) != Error::Ok) {
      fprintf(stderr, "runner: cannot generate values of dtype %s for input %zu; pass a file\n", scalar_type_name(st),
              index);
      host_aligned_free(buf);
      return Error::NotSupported;
    }
  } else {
    FILE* f = fopen(spec, "rb");
    if (f == nullptr) {
      fprintf(stderr, "runner: cannot open input file %s for input %zu\n", spec, index);
      host_aligned_free(buf);
      return Error::AccessFailed;
    }
    // Read it all, to say how long the file really is when it is not exactly the input's size.
    unsigned long long length = fread(buf, 1, nbytes, f);
    char rest[4096];
    for (size_t r; !ferror(f) && (r = fread(rest, 1, sizeof(rest), f)) > 0;) length += r;
    const bool failed = ferror(f) != 0;  // e.g. a directory: fopen succeeds, reading does not
    fclose(f);
    if (failed) {
      fprintf(stderr, "runner: cannot read input file %s for input %zu\n", spec, index);
      host_aligned_free(buf);
      return Error::AccessFailed;
    }
    if (length != nbytes) {
      fprintf(stderr, "runner: input %zu needs exactly %zu bytes (%s [%lld elements]); %s has %llu\n", index, nbytes,
              scalar_type_name(st), static_cast<long long>(n), spec, length);
      host_aligned_free(buf);
      return Error::InvalidArgument;
    }
  }
  Error e = method.set_input(index, st, t->sizes(), buf, nbytes);
  host_aligned_free(buf);
  return e;
}

void print_tensor(const char* what, size_t index, const Tensor& t, int limit) {
  printf("%s %zu: %s [", what, index, scalar_type_name(t.scalar_type()));
  for (int32_t d = 0; d < t.dim(); ++d) printf(d ? ", %d" : "%d", static_cast<int>(t.size(d)));
  printf("]");
  const int64_t n = t.numel() < limit ? t.numel() : limit;
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (t.scalar_type()) {
      case ScalarType::Float: v = t.const_data_ptr<float>()[i]; break;
      case ScalarType::Double: v = t.const_data_ptr<double>()[i]; break;
      case ScalarType::Half: v = static_cast<float>(t.const_data_ptr<Half>()[i]); break;
      case ScalarType::BFloat16: v = static_cast<float>(t.const_data_ptr<BFloat16>()[i]); break;
      case ScalarType::Long: v = static_cast<double>(t.const_data_ptr<int64_t>()[i]); break;
      case ScalarType::Int: v = t.const_data_ptr<int32_t>()[i]; break;
      case ScalarType::Char: v = t.const_data_ptr<int8_t>()[i]; break;
      case ScalarType::Byte: v = t.const_data_ptr<uint8_t>()[i]; break;
      case ScalarType::Bool: v = static_cast<bool>(t.const_data_ptr<Bool8>()[i]); break;
      default: break;
    }
    printf(i ? " %.6g" : ": %.6g", v);
  }
  printf(t.numel() > n ? " ...\n" : "\n");
}

}  // namespace

int main(int argc, char** argv) {
  ember_pal_init();
#if EMBER_RUNNER_VERIFY
  // A bundled program's test cases instead of a run (runner_verify only; see verify.h).
  if (wants_verify(argc, argv)) return verify_main(argc, argv);
#endif
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const bool has_value = i + 1 < argc;
    bool ok = true;
    if (strcmp(a, "--method") == 0 && has_value) {
      o.method = argv[++i];
    } else if (strcmp(a, "--input") == 0 && has_value) {
      if (o.num_inputs == kMaxInputs) {
        fprintf(stderr, "runner: at most %d --input flags\n", kMaxInputs);
        return usage(argv[0]);
      }
      o.inputs[o.num_inputs++] = argv[++i];
    } else if (strcmp(a, "--runs") == 0 && has_value) {
      ok = parse_int(argv[++i], 1, 1000000000, &o.runs);
    } else if (strcmp(a, "--warmup") == 0 && has_value) {
      ok = parse_int(argv[++i], 0, 1000000000, &o.warmup);
    } else if (strcmp(a, "--print") == 0 && has_value) {
      ok = parse_int(argv[++i], 0, 1 << 30, &o.print);
    } else if (kControlFlow && strcmp(a, "--instruction-limit") == 0 && has_value) {
      char* end = nullptr;
      o.instruction_limit = strtoll(argv[++i], &end, 10);
      ok = end != argv[i] && *end == '\0' && o.instruction_limit >= 0;
#if EMBER_RUNNER_THREADS
    } else if (strcmp(a, "--threads") == 0 && has_value) {
      ok = parse_int(argv[++i], 1, PosixThreadPool::kMaxThreads, &o.threads);
#endif
    } else if (strcmp(a, "--output-dir") == 0 && has_value) {
      o.output_dir = argv[++i];
#if EMBER_EVENT_TRACER
    } else if (strcmp(a, "--profile") == 0 && has_value) {
      o.profile = argv[++i];
    } else if (strcmp(a, "--profile-events") == 0 && has_value) {
      char* end = nullptr;
      o.profile_events = strtoll(argv[++i], &end, 10);
      ok = end != argv[i] && *end == '\0' && o.profile_events > 0 && o.profile_events <= (1LL << 32);
    } else if (strcmp(a, "--profile-memory") == 0) {
      o.profile_memory = true;
    } else if (strcmp(a, "--profile-outputs") == 0 && has_value) {
      o.profile_outputs = argv[++i];
    } else if (strcmp(a, "--profile-output-bytes") == 0 && has_value) {
      char* end = nullptr;
      o.profile_output_bytes = strtoll(argv[++i], &end, 10);
      ok = end != argv[i] && *end == '\0' && o.profile_output_bytes > 0 && o.profile_output_bytes <= (1LL << 40);
#endif
    } else if (a[0] == '-' || o.model != nullptr) {
      return usage(argv[0]);
    } else {
      o.model = a;
    }
    if (!ok) {
      fprintf(stderr, "runner: %s takes a whole number in range, got '%s'\n", a, argv[i]);
      return usage(argv[0]);
    }
  }
  if (o.model == nullptr) return usage(argv[0]);
#if EMBER_EVENT_TRACER
  if (o.profile == nullptr && (o.profile_memory || o.profile_outputs != nullptr)) {
    fprintf(stderr, "runner: --profile-memory and --profile-outputs add to a trace: give --profile OUT.etdp too\n");
    return 2;
  }
#endif

  const uint64_t load_t0 = ember_pal_ticks_ns();

  Result<MmapDataLoader> loader = MmapDataLoader::open(o.model);
  if (!loader.ok()) {
    fprintf(stderr, "runner: cannot read %s: %s\n", o.model, error_name(loader.error()));
    return 3;
  }
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) {
    fprintf(stderr, "runner: %s is not a loadable program: %s\n", o.model, error_name(program.error()));
    return 3;
  }
  Result<MethodMeta> meta = program->method_meta(o.method);
  if (!meta.ok()) {
    fprintf(stderr, "runner: method '%s' of %s: %s\n", o.method, o.model, error_name(meta.error()));
    return 3;
  }

  // Every buffer sized from the program, before the method is loaded, and every claim checked against the
  // machine before any of it is allocated.
  MemoryClaims claims;
  char why[320];
#if EMBER_RUNNER_THREADS
  // Scratch for every thread: kernels that give each thread a slice of their own (depthwise) then use them all.
  if (!read_memory_claims(meta.get(), physical_memory_bytes(), &claims, why, sizeof(why), o.threads)) {
#else
  if (!read_memory_claims(meta.get(), physical_memory_bytes(), &claims, why, sizeof(why))) {
#endif
    fprintf(stderr, "runner: %s: %s\n", o.model, why);
    return 3;
  }
  const size_t num_pools = claims.num_pools;
  Span<uint8_t> pools[MemoryClaims::kMaxPools];
  Owned owned;
  for (size_t p = 0; p < num_pools; ++p) {
    const size_t size = claims.pool_bytes[p];
    uint8_t* data = static_cast<uint8_t*>(owned.keep(aligned(size)));
    if (data == nullptr) {
      fprintf(stderr, "runner: cannot allocate pool %zu of method '%s': %zu bytes\n", p + 1, o.method, size);
      return 3;
    }
    pools[p] = Span<uint8_t>(data, size);
  }
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools, num_pools));
  const size_t predicted = claims.method_allocator_bytes;
  void* method_buffer = owned.keep(aligned(predicted));
  // The kernels' scratch, exactly as planned: what the linked kernels say they need for these shapes.
  const size_t temp_size = claims.scratch_bytes;
  void* temp_buffer = owned.keep(aligned(temp_size));
  if (method_buffer == nullptr || temp_buffer == nullptr) {
    fprintf(stderr, "runner: cannot allocate the method allocator (%zu bytes) and kernel scratch (%zu bytes)\n",
            predicted, temp_size);
    return 3;
  }
  MemoryAllocator method_alloc(method_buffer, predicted);
  MemoryAllocator temp_alloc(temp_buffer, temp_size);
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;
#if EMBER_RUNNER_THREADS
  memory.threads = o.threads;
#endif

  const uint64_t method_t0 = ember_pal_ticks_ns();
  Result<Method> method = program->load_method(o.method, &memory);
  const uint64_t load_t1 = ember_pal_ticks_ns();
  if (!method.ok()) {
    fprintf(stderr, "runner: method '%s' did not load: %s\n", o.method, error_name(method.error()));
    return 3;
  }
  if (kControlFlow) method->set_instruction_limit(static_cast<uint64_t>(o.instruction_limit));
#if EMBER_RUNNER_THREADS
  // The pool lives until main returns (its workers are joined then); one thread needs none.
  struct PoolOwner {
    PosixThreadPool* pool = nullptr;
    ~PoolOwner() { PosixThreadPool::destroy(pool); }
  } threads;
  if (o.threads > 1) {
    Result<PosixThreadPool*> pool = PosixThreadPool::create(o.threads);
    if (!pool.ok()) {
      fprintf(stderr, "runner: cannot start %d threads: %s\n", o.threads, error_name(pool.error()));
      return 3;
    }
    threads.pool = pool.get();
    method->set_thread_pool(threads.pool);
  }
#endif
  if (static_cast<size_t>(o.num_inputs) > method->num_inputs()) {
    fprintf(stderr, "runner: method '%s' takes %zu inputs; %d --input flags given\n", o.method, method->num_inputs(),
            o.num_inputs);
    return 4;
  }
  uint64_t total = 0, best = UINT64_MAX;
  uint64_t* times = static_cast<uint64_t*>(owned.keep(malloc(sizeof(uint64_t) * static_cast<size_t>(o.runs))));
  if (times == nullptr) {
    fprintf(stderr, "runner: cannot hold %d run times\n", o.runs);
    return 2;
  }
#if EMBER_EVENT_TRACER
  // Caller memory for the trace, sized before the runs; the tracer only fills it (and counts what does not fit).
  BufferEventTracer buffer_tracer{Span<TraceRecord>()};
  BufferEventTracer* tracer = nullptr;
  size_t capacity = 0;
  if (o.profile != nullptr) {
    // Debug mode records each output tensor too: twice the instructions covers all but many-output kernels.
    const size_t per_instruction = o.profile_outputs != nullptr ? 2 : 1;
    capacity = o.profile_events > 0
                   ? static_cast<size_t>(o.profile_events)
                   : (per_instruction * method->num_instructions() + 2 + (temp_size != 0) + num_pools) *
                         static_cast<size_t>(o.runs);
    void* storage = owned.keep(malloc(capacity * sizeof(TraceRecord)));
    if (storage == nullptr) {
      fprintf(stderr, "runner: cannot allocate %zu trace records (%zu bytes)\n", capacity,
              capacity * sizeof(TraceRecord));
      return 2;
    }
    Span<uint8_t> debug;
    if (o.profile_outputs != nullptr) {
      const size_t bytes = static_cast<size_t>(o.profile_output_bytes);
      void* p = owned.keep(malloc(bytes));
      if (p == nullptr) {
        fprintf(stderr, "runner: cannot allocate the %zu-byte output buffer; lower --profile-output-bytes\n", bytes);
        return 2;
      }
      debug = Span<uint8_t>(static_cast<uint8_t*>(p), bytes);
    }
    buffer_tracer = BufferEventTracer(Span<TraceRecord>(static_cast<TraceRecord*>(storage), capacity), debug);
    tracer = &buffer_tracer;
  }
#endif
  for (int r = -o.warmup; r < o.runs; ++r) {
    // Inputs are set before every run: the plan reuses an input's bytes once the input is no longer needed.
    for (size_t i = 0; i < method->num_inputs(); ++i) {
      const char* spec = i < static_cast<size_t>(o.num_inputs) ? o.inputs[i]
                         : o.num_inputs                        ? o.inputs[o.num_inputs - 1]
                                                               : "random";
      Error e = fill_input(method.get(), i, spec);
      if (e != Error::Ok) {
        fprintf(stderr, "runner: input %zu (%s) refused: %s\n", i, spec, error_name(e));
        return 4;
      }
    }
#if EMBER_EVENT_TRACER
    method->set_event_tracer(r >= 0 ? tracer : nullptr);  // warm-up runs are not traced
#endif
    const uint64_t t0 = ember_pal_ticks_ns();
    Error e = method->execute();
    const uint64_t dt = ember_pal_ticks_ns() - t0;
    if (e != Error::Ok) {
      fprintf(stderr, "runner: run %d of method '%s' failed: %s\n", r, o.method, error_name(e));
      return 5;
    }
    if (r < 0) continue;  // warm-up
    times[r] = dt;
    total += dt;
    best = dt < best ? dt : best;
  }

  printf("program: %s, method '%s': %zu instructions, %zu inputs, %zu outputs\n", o.model, o.method,
         method->num_instructions(), method->num_inputs(), method->num_outputs());
  for (size_t p = 0; p < num_pools; ++p) printf("memory: pool %zu: %zu bytes planned\n", p + 1, pools[p].size());
  printf("memory: method allocator: %zu bytes used, %zu predicted by MethodMeta\n", method_alloc.used_bytes(),
         predicted);
  printf("memory: kernel scratch: %zu bytes used, %zu predicted by MethodMeta\n", temp_alloc.used_bytes(), temp_size);
  printf("time: %d runs, mean %.1f us, min %.1f us\n", o.runs, static_cast<double>(total) / o.runs / 1000.0,
         static_cast<double>(best) / 1000.0);
  qsort(times, static_cast<size_t>(o.runs), sizeof(uint64_t), [](const void* a, const void* b) {
    const uint64_t x = *static_cast<const uint64_t*>(a), y = *static_cast<const uint64_t*>(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
  // Nearest rank: the smallest time that at least q of the runs do not exceed.
  auto rank = [&](int percent) { return times[(static_cast<size_t>(o.runs) * percent + 99) / 100 - 1]; };
  printf("time: %d warm-up runs, min %.3f us, median %.3f us, p90 %.3f us\n", o.warmup,
         static_cast<double>(times[0]) / 1000.0, static_cast<double>(rank(50)) / 1000.0,
         static_cast<double>(rank(90)) / 1000.0);
  printf("time: load %.3f us (program and buffers %.3f us, load_method %.3f us)\n",
         static_cast<double>(load_t1 - load_t0) / 1000.0, static_cast<double>(method_t0 - load_t0) / 1000.0,
         static_cast<double>(load_t1 - method_t0) / 1000.0);
#if EMBER_EVENT_TRACER
  if (tracer != nullptr) {
    method->set_event_tracer(nullptr);
    OperatorNames names{&method.get(), [](const void* m, uint32_t op, const char** overload) {
                          return static_cast<const Method*>(m)->operator_name(op, overload);
                        }};
    const std::vector<uint8_t> etdump =
        write_etdump(tracer->records(), tracer->dropped(), o.method, names,
                     o.profile_memory ? EtdumpEvents::kProfileAndAllocations : EtdumpEvents::kProfile,
                     tracer->debug_buffer());
    FILE* f = fopen(o.profile, "wb");
    if (f == nullptr || fwrite(etdump.data(), 1, etdump.size(), f) != etdump.size()) {
      fprintf(stderr, "runner: cannot write the profile %s\n", o.profile);
      if (f) fclose(f);
      return 6;
    }
    fclose(f);
    printf("profile: %s: %zu events, %zu bytes (ETDump)\n", o.profile, tracer->records().size(), etdump.size());
    if (tracer->dropped() != 0) {
      fprintf(stderr, "runner: the trace buffer (%zu records) was full: %zu events dropped; raise --profile-events\n",
              capacity, tracer->dropped());
    }
    if (o.profile_outputs != nullptr) {
      const ArrayRef<uint8_t> debug = tracer->debug_buffer();
      FILE* d = fopen(o.profile_outputs, "wb");
      if (d == nullptr || (debug.size() != 0 && fwrite(debug.data(), 1, debug.size(), d) != debug.size())) {
        fprintf(stderr, "runner: cannot write the outputs %s\n", o.profile_outputs);
        if (d) fclose(d);
        return 6;
      }
      fclose(d);
      printf("profile: %s: %zu bytes of kernel outputs (the ETDump's debug buffer)\n", o.profile_outputs, debug.size());
      if (tracer->dropped_outputs() != 0) {
        fprintf(stderr,
                "runner: the output buffer (%lld bytes) was full: %zu output tensors dropped; raise "
                "--profile-output-bytes\n",
                o.profile_output_bytes, tracer->dropped_outputs());
      }
    }
  }
#endif
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    Result<EValue> out = method->output_value(i);
    if (!out.ok()) {
      fprintf(stderr, "runner: output %zu of method '%s' is not readable: %s\n", i, o.method, error_name(out.error()));
      return 5;
    }
    // A scalar output (a constant method's value, a computed size) is printed only.
    const EValue& v = out.get();
    if (kScalarOutputs && !v.is_tensor()) {
      if (v.is_double()) {
        printf("output %zu: Double %.17g\n", i, v.as_double());
      } else {
        printf("output %zu: %s %lld\n", i, v.is_int() ? "Int" : "Bool",
               static_cast<long long>(v.is_int() ? v.as_int() : static_cast<int64_t>(v.as_bool())));
      }
      continue;
    }
    const Tensor& t = v.as_tensor();
    print_tensor("output", i, t, o.print);
    if (o.output_dir != nullptr) {
      char path[1024];
      snprintf(path, sizeof(path), "%s/output_%zu.bin", o.output_dir, i);
      FILE* f = fopen(path, "wb");
      if (f == nullptr || fwrite(t.const_data_ptr(), 1, t.nbytes(), f) != t.nbytes()) {
        fprintf(stderr, "runner: cannot write %s\n", path);
        if (f) fclose(f);
        return 6;
      }
      fclose(f);
    }
  }
  return 0;
}
