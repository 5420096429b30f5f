// The bare-metal runner, on every board (platforms/mps3_an547, platforms/mps2_an386): runs the program embedded at
// build time (no file system on a microcontroller), with every memory pool sized from the program's plan and
// placed by the linker.
//
//   qemu-system-arm -M mps3-an547 -nographic -icount shift=0 -kernel runner.elf      (or -M mps2-an386)
//     -semihosting-config enable=on,target=native,arg=runner,arg=--runs,arg=1
//
//   runner [--input SPEC]... [--runs N] [--output-dir DIR] [--print N] [--timeout-ms N]
//   SPEC: zeros | ones | random[:SEED] | PATH (a host file, read through semihosting)
//
// Compiled per firmware (ember_firmware in defs.bzl): what its program's selection leaves out ("ember/
// selected_features.h": scalar outputs) the runner leaves out too.
//
// Exit codes are the Linux runner's (0 ok, 2 usage, 3 load, 4 input, 5 execution, 6 output) plus the board's:
// 7 the watchdog stopped a run, 8 a fault. --timeout-ms bounds each run in virtual time (default 60 s).
//
// Built with the event tracer (`--config=cortex_m55 --config=profiling`), it also takes --profile FILE
// [--profile-events N]: every run traced per instruction into a buffer in the board's big memory (the AN547's DDR,
// the AN386's PSRAM), written to the host as a raw trace (devtools/raw_trace.py: a 64-byte header, then the 32-byte
// TraceRecords as recorded), which `python -m devtools.profile model.pte FILE` reads like an ETDump. No ETDump builder
// on the device: it needs a heap.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/selected_features.h"
#include "platforms/bare_metal/embedded_program.h"
#include "platforms/bare_metal/semihosting.h"
#include "platforms/bare_metal/startup.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/runner/fill.h"
#if EMBER_RUNNER_VERIFY
#include "platforms/bare_metal/verify.h"
#endif
#if EMBER_EVENT_TRACER
#include "runtime/devtools/buffer_event_tracer.h"
#endif

using namespace ember;

extern "C" uint8_t __method_arena_start[], __method_arena_end[];

namespace {

void out(const char* format, ...) __attribute__((format(printf, 1, 2)));
void out(const char* format, ...) {
  char line[256];
  va_list args;
  va_start(args, format);
  const int n = vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  if (n > 0) semihosting::write_stdout(line, static_cast<size_t>(n) < sizeof(line) ? n : sizeof(line) - 1);
}

// %.6g without newlib's float printf, which would need a heap (its dtoa allocates), and without libm: log10 and
// pow brought about 10 KB of newlib's tables into every firmware. Scaling by tens in doubles gives the six digits
// printf gives, but for values within an ulp or so of a rounding tie.
void format_double(char* buf, size_t size, double v) {
  if (v != v) {
    snprintf(buf, size, "nan");
    return;
  }
  const char* sign = v < 0 ? "-" : "";
  v = v < 0 ? -v : v;
  if (v > 1.7976931348623157e308) {
    snprintf(buf, size, "%sinf", sign);
    return;
  }
  if (v == 0) {
    snprintf(buf, size, "%s0", sign);
    return;
  }
  // v = m x 10^(e - 5), with m in [1e5, 1e6): e is the exponent of the leading digit.
  int e = 5;
  while (v >= 1e21) {
    v *= 1e-16;
    e += 16;
  }
  while (v >= 1e6) {
    v /= 10;
    ++e;
  }
  while (v < 1e-11) {
    v *= 1e16;
    e -= 16;
  }
  while (v < 1e5) {
    v *= 10;
    --e;
  }
  long m = static_cast<long>(v + 0.5);  // six significant digits, a tie rounded away from zero as lround does
  if (m >= 1000000) {
    m /= 10;
    ++e;
  }
  char digits[12];
  snprintf(digits, sizeof(digits), "%06ld", m);
  int last = 5;
  while (last > 0 && digits[last] == '0') --last;  // trailing zeros go, as with %g
  if (e < -4 || e >= 6) {
    snprintf(buf, size, "%s%c%s%.*se%c%02d", sign, digits[0], last ? "." : "", last, digits + 1, e < 0 ? '-' : '+',
             e < 0 ? -e : e);
  } else if (e >= 0) {
    const int frac = last > e ? last - e : 0;
    snprintf(buf, size, "%s%.*s%s%.*s", sign, e + 1, digits, frac ? "." : "", frac, digits + e + 1);
  } else {
    snprintf(buf, size, "%s0.%.*s%.*s", sign, -e - 1, "000", last + 1, digits);  // e is -1..-4 here
  }
}

void print_tensor(size_t index, const Tensor& t, int limit) {
  out("output %u: %s [", static_cast<unsigned>(index), scalar_type_name(t.scalar_type()));
  for (int32_t d = 0; d < t.dim(); ++d) out(d ? ", %d" : "%d", static_cast<int>(t.size(d)));
  out("]");
  const int64_t n = t.numel() < limit ? t.numel() : limit;
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (t.scalar_type()) {
      case ScalarType::Float: v = t.const_data_ptr<float>()[i]; break;
      case ScalarType::Double: v = t.const_data_ptr<double>()[i]; break;
      case ScalarType::Long: v = static_cast<double>(t.const_data_ptr<int64_t>()[i]); break;
      case ScalarType::Int: v = t.const_data_ptr<int32_t>()[i]; break;
      case ScalarType::Char: v = t.const_data_ptr<int8_t>()[i]; break;
      case ScalarType::Byte: v = t.const_data_ptr<uint8_t>()[i]; break;
      case ScalarType::Bool: v = t.const_data_ptr<bool>()[i]; break;
      default: break;
    }
    char text[32];
    format_double(text, sizeof(text), v);
    out(i ? " %s" : ": %s", text);
  }
  out(t.numel() > n ? " ...\n" : "\n");
}

// Decimal text of a 64-bit count (newlib-nano's printf has no %ll).
const char* u64(uint64_t v, char (&buf)[24]) {
  char* p = buf + sizeof(buf) - 1;
  *p = '\0';
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return p;
}

int fill_input(Method& method, size_t index, const char* full_spec) {
  // "SPEC@[d0,d1,...]": a bounded dynamic input's shape for this run (runtime/runner/fill.h); a static input's
  // must be its own.
  char spec[256];
  int32_t shape[kMaxTensorDim];
  int rank = -1;
  if (!parse_input_spec(full_spec, spec, sizeof(spec), shape, kMaxTensorDim, &rank)) {
    out("runner: input %u: cannot read the shape in %s\n", static_cast<unsigned>(index), full_spec);
    return 4;
  }
  if (rank >= 0 && method.resize_input(index, ArrayRef<int32_t>(shape, static_cast<size_t>(rank))) != Error::Ok) {
    out("runner: input %u refused the shape in %s\n", static_cast<unsigned>(index), full_spec);
    return 4;
  }
  Result<Tensor> t = method.input(index);
  if (!t.ok()) return 4;
  void* data = t->mutable_data_ptr();
  if (data == nullptr) {
    out("runner: input %u is not memory-planned\n", static_cast<unsigned>(index));
    return 4;
  }
  if (is_generated_spec(spec)) {
    if (fill_generated(t->scalar_type(), data, t->numel(), spec) != Error::Ok) {
      out("runner: cannot generate %s values for input %u; pass a file\n", scalar_type_name(t->scalar_type()),
          static_cast<unsigned>(index));
      return 4;
    }
    return 0;
  }
  const int h = semihosting::open(spec, false);
  if (h < 0) {
    out("runner: cannot open input file %s on the host\n", spec);
    return 4;
  }
  const long length = semihosting::file_length(h);
  const size_t got = length == static_cast<long>(t->nbytes()) ? semihosting::read(h, data, t->nbytes()) : 0;
  semihosting::close(h);
  if (got != t->nbytes()) {
    out("runner: input %u needs exactly %u bytes (%s [%ld elements]); %s has %ld\n", static_cast<unsigned>(index),
        static_cast<unsigned>(t->nbytes()), scalar_type_name(t->scalar_type()), static_cast<long>(t->numel()), spec,
        length);
    return 4;
  }
  return 0;
}

int usage() {
  out("usage: runner [--input zeros|ones|random[:SEED]|FILE[@[SHAPE]]]... [--runs N] [--output-dir DIR] [--print N] "
#if EMBER_EVENT_TRACER
      "[--timeout-ms N] [--profile FILE [--profile-events N]]\n");
#else
      "[--timeout-ms N]\n");
#endif
  return 2;
}

#if EMBER_EVENT_TRACER
// 16,384 records (512 KB) of the board's big memory (the linker script places .ember.trace): MobileNetV2 0.35 is 99
// instructions a run.
constexpr size_t kTraceCapacity = 16384;
__attribute__((section(".ember.trace"))) TraceRecord g_trace[kTraceCapacity];

// The raw trace's header (devtools/raw_trace.py reads it): little-endian, 64 bytes.
struct RawTraceHeader {
  char magic[4];            // "EMTR"
  uint32_t version;         // 1
  uint32_t record_size;     // sizeof(TraceRecord)
  uint32_t records;         // how many follow
  uint64_t dropped;         // events that did not fit
  uint64_t ticks_per_second;  // the records' time unit: the PAL's nanoseconds
  char method[32];          // NUL-terminated, truncated
};
static_assert(sizeof(RawTraceHeader) == 64, "the raw trace header is 64 bytes");

int write_trace(const char* path, const BufferEventTracer& tracer) {
  RawTraceHeader h = {};
  memcpy(h.magic, "EMTR", 4);
  h.version = 1;
  h.record_size = sizeof(TraceRecord);
  h.records = static_cast<uint32_t>(tracer.records().size());
  h.dropped = tracer.dropped();
  h.ticks_per_second = 1000000000ull;
  strncpy(h.method, kEmbeddedMethod, sizeof(h.method) - 1);
  const size_t bytes = tracer.records().size() * sizeof(TraceRecord);
  const int f = semihosting::open(path, true);
  const bool ok = f >= 0 && semihosting::write(f, &h, sizeof(h)) == sizeof(h) &&
                  semihosting::write(f, tracer.records().data(), bytes) == bytes;
  if (f >= 0) semihosting::close(f);
  if (!ok) {
    out("runner: cannot write the profile %s on the host\n", path);
    return 6;
  }
  out("profile: %s: %u events%s, %u bytes (raw trace: python -m devtools.profile MODEL.pte %s)\n", path,
      static_cast<unsigned>(h.records), h.dropped ? " (buffer full: later events dropped)" : "",
      static_cast<unsigned>(sizeof(h) + bytes), path);
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  ember_pal_init();
  const char* inputs[16];
  int num_inputs = 0, runs = 1, print = 8;
  long timeout_ms = 60000;
  const char* output_dir = nullptr;
#if EMBER_RUNNER_VERIFY
  bool verify = false;
#endif
#if EMBER_EVENT_TRACER
  const char* profile = nullptr;
  long profile_events = kTraceCapacity;
#endif
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
#if EMBER_RUNNER_VERIFY
    if (strcmp(argv[i], "--verify") == 0) {
      verify = true;
      continue;
    }
#endif
#if EMBER_EVENT_TRACER
    if (strcmp(argv[i], "--profile") == 0 && has_value) {
      profile = argv[++i];
      continue;
    }
    if (strcmp(argv[i], "--profile-events") == 0 && has_value) {
      profile_events = atol(argv[++i]);
      if (profile_events < 1 || profile_events > static_cast<long>(kTraceCapacity)) {
        out("runner: --profile-events takes 1 to %u\n", static_cast<unsigned>(kTraceCapacity));
        return 2;
      }
      continue;
    }
#endif
    if (strcmp(argv[i], "--input") == 0 && has_value && num_inputs < 16) {
      inputs[num_inputs++] = argv[++i];
    } else if (strcmp(argv[i], "--runs") == 0 && has_value) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--print") == 0 && has_value) {
      print = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--output-dir") == 0 && has_value) {
      output_dir = argv[++i];
    } else if (strcmp(argv[i], "--timeout-ms") == 0 && has_value) {
      timeout_ms = atol(argv[++i]);
    } else {
      return usage();
    }
  }
  if (runs < 1 || timeout_ms < 0) return usage();

  BufferDataLoader loader(kEmbeddedProgram, kEmbeddedProgramSize);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    out("runner: the embedded program %s is not loadable: %s\n", kEmbeddedProgramName, error_name(program.error()));
    return 3;
  }
  Result<MethodMeta> meta = program->method_meta(kEmbeddedMethod);
  if (!meta.ok()) {
    out("runner: no method '%s' in %s: %s\n", kEmbeddedMethod, kEmbeddedProgramName, error_name(meta.error()));
    return 3;
  }

  // The pools were sized from this same program at build time; check anyway, so a stale build says so.
  Span<uint8_t> pools[8];
  const size_t num_pools = meta->num_memory_planned_buffers();
  if (num_pools != kEmbeddedNumPools || num_pools > 8) {
    out("runner: method '%s' plans %u pools; the build reserved %u\n", kEmbeddedMethod,
        static_cast<unsigned>(num_pools), static_cast<unsigned>(kEmbeddedNumPools));
    return 3;
  }
  for (size_t p = 0; p < num_pools; ++p) {
    Result<size_t> size = meta->memory_planned_buffer_size(p);
    if (!size.ok()) {
      out("runner: pool %u of method '%s' has no valid size: %s\n", static_cast<unsigned>(p + 1), kEmbeddedMethod,
          error_name(size.error()));
      return 3;
    }
    const size_t want = *size;
    if (want > kEmbeddedPools[p].size) {
      out("runner: pool %u needs %u bytes; the build reserved %u in %s\n", static_cast<unsigned>(p + 1),
          static_cast<unsigned>(want), static_cast<unsigned>(kEmbeddedPools[p].size), kEmbeddedPools[p].memory);
      return 3;
    }
    pools[p] = Span<uint8_t>(kEmbeddedPools[p].data, kEmbeddedPools[p].size);
  }
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools, num_pools));

  // The method allocator and then the kernels' scratch take what the arena's memory (the board's DTCM, SSRAM23, ...)
  // has left after stack and data, each exactly what MethodMeta says (the scratch: what this image's kernels need
  // for these shapes; no size is guessed).
  const size_t arena = static_cast<size_t>(__method_arena_end - __method_arena_start);
  const size_t predicted = meta->method_allocator_bytes();
  const size_t scratch = meta->scratch_bytes();
  const size_t predicted_16 = (predicted + 15) & ~size_t{15};
  if (predicted_16 > arena || scratch > arena - predicted_16) {
    const size_t need = predicted_16 + scratch;
    out("runner: method '%s' needs %u bytes of bookkeeping and %u of kernel scratch; " EMBER_BOARD_ARENA_MEMORY
        " has %u left: %u bytes short\n",
        kEmbeddedMethod, static_cast<unsigned>(predicted), static_cast<unsigned>(scratch), static_cast<unsigned>(arena),
        static_cast<unsigned>(need - arena));
    return 3;
  }
  MemoryAllocator method_alloc(__method_arena_start, predicted);
  MemoryAllocator temp_alloc(__method_arena_start + predicted_16, scratch);
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;

  const uint64_t load_t0 = board::now_ns();
  Result<Method> method = program->load_method(kEmbeddedMethod, &memory);
  const uint64_t load_ns = board::now_ns() - load_t0;
  if (!method.ok()) {
    out("runner: method '%s' did not load: %s\n", kEmbeddedMethod, error_name(method.error()));
    return 3;
  }
#if EMBER_RUNNER_VERIFY
  if (verify) {
    // The embedded bundle's test cases instead of runs: every case, then the verdict (verify.cc).
    board::watchdog_arm(static_cast<uint64_t>(timeout_ms) * 1000000ull, "the bundled test cases");
    return board_verify(method.get(), out);
  }
#endif

#if EMBER_EVENT_TRACER
  BufferEventTracer tracer{Span<TraceRecord>(g_trace, static_cast<size_t>(profile_events))};
  if (profile != nullptr) method->set_event_tracer(&tracer);
#endif
  uint64_t total = 0, best = UINT64_MAX;
  for (int r = 0; r < runs; ++r) {
    for (size_t i = 0; i < method->num_inputs(); ++i) {
      const char* spec = i < static_cast<size_t>(num_inputs) ? inputs[i]
                         : num_inputs                        ? inputs[num_inputs - 1]
                                                             : "random";
      const int status = fill_input(method.get(), i, spec);
      if (status != 0) return status;
    }
    board::watchdog_arm(static_cast<uint64_t>(timeout_ms) * 1000000ull, "a run of the embedded method");
    const uint64_t t0 = board::now_ns();
    const Error e = method->execute();
    const uint64_t dt = board::now_ns() - t0;
    board::watchdog_arm(0, "");
    if (e != Error::Ok) {
      out("runner: run %d of method '%s' failed: %s\n", r, kEmbeddedMethod, error_name(e));
      return 5;
    }
    total += dt;
    best = dt < best ? dt : best;
  }

#if EMBER_EVENT_TRACER
  if (profile != nullptr) {
    method->set_event_tracer(nullptr);
    const int status = write_trace(profile, tracer);
    if (status != 0) return status;
  }
#endif
  out("program: %s (embedded, %u bytes), method '%s': %u instructions, %u inputs, %u outputs\n", kEmbeddedProgramName,
      static_cast<unsigned>(kEmbeddedProgramSize), kEmbeddedMethod, static_cast<unsigned>(method->num_instructions()),
      static_cast<unsigned>(method->num_inputs()), static_cast<unsigned>(method->num_outputs()));
  for (size_t p = 0; p < num_pools; ++p) {
    out("memory: pool %u: %u bytes planned, in %s at 0x%08lx\n", static_cast<unsigned>(p + 1),
        static_cast<unsigned>(pools[p].size()), kEmbeddedPools[p].memory,
        static_cast<unsigned long>(reinterpret_cast<uintptr_t>(pools[p].data())));
  }
  out("memory: method allocator: %u bytes used, %u predicted by MethodMeta, in " EMBER_BOARD_ARENA_MEMORY
      " (%u free)\n",
      static_cast<unsigned>(method_alloc.used_bytes()), static_cast<unsigned>(predicted),
      static_cast<unsigned>(arena - predicted_16 - scratch));
  out("memory: kernel scratch: %u bytes used, %u predicted by MethodMeta, in " EMBER_BOARD_ARENA_MEMORY "\n",
      static_cast<unsigned>(temp_alloc.used_bytes()), static_cast<unsigned>(scratch));
  // Virtual time: under -icount shift=0 one nanosecond is one instruction.
  char a[24], b[24], c[24];
  out("time: load %s ns; %d runs, mean %s ns, min %s ns (virtual)\n", u64(load_ns, a), runs,
      u64(total / static_cast<uint64_t>(runs), b), u64(best, c));
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    Result<EValue> result = method->output_value(i);
    if (!result.ok()) {
      out("runner: output %u is not readable: %s\n", static_cast<unsigned>(i), error_name(result.error()));
      return 5;
    }
    if (selected_features::kScalarOutputs &&
        !result->is_tensor()) {  // a scalar (a computed size, a constant method's value): printed only
      const EValue& v = result.get();
      if (v.is_int()) out("output %u: Int %ld\n", static_cast<unsigned>(i), static_cast<long>(v.as_int()));
      if (v.is_double()) out("output %u: Double %g\n", static_cast<unsigned>(i), v.as_double());
      if (v.is_bool()) out("output %u: Bool %s\n", static_cast<unsigned>(i), v.as_bool() ? "true" : "false");
      continue;
    }
    const Tensor& t = result->as_tensor();
    print_tensor(i, t, print);
    if (output_dir != nullptr) {
      char path[256];
      snprintf(path, sizeof(path), "%s/output_%u.bin", output_dir, static_cast<unsigned>(i));
      const int h = semihosting::open(path, true);
      const size_t wrote = h >= 0 ? semihosting::write(h, t.const_data_ptr(), t.nbytes()) : 0;
      if (h >= 0) semihosting::close(h);
      if (wrote != t.nbytes()) {
        out("runner: cannot write %s on the host\n", path);
        return 6;
      }
    }
  }
  return 0;
}
