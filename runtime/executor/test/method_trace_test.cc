// Method::execute's event tracer hooks (runtime/executor/execute_trace.h). Run in both builds: with
// --config=profiling it checks what execute() reports; in the default build, that Method has no tracer at all.
#include <string.h>

#include <initializer_list>
#include <type_traits>
#include <utility>

#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/test_program.h"
#if EMBER_EVENT_TRACER
#include "runtime/devtools/buffer_event_tracer.h"
#endif

namespace ember {
namespace {

template <typename T, typename = void>
struct HasTracer : std::false_type {};
template <typename T>
struct HasTracer<T, std::void_t<decltype(std::declval<T&>().set_event_tracer(nullptr))>> : std::true_type {};

#if EMBER_EVENT_TRACER
static_assert(HasTracer<Method>::value, "the profiling build must give Method its tracer");

namespace fb = ember_pte_obj;

// The base program's method (out = f(x), one kernel call on a [2, 2] float input), loaded with its input set.
struct Loaded {
  std::vector<uint8_t> bytes = testing::serialize(*testing::base_program());
  BufferDataLoader loader{bytes.data(), bytes.size()};
  Result<Program> program = Program::load(&loader);
  testing::TestMemory memory;
  Result<Method> method =
      program.ok() ? program->load_method("forward", &memory.manager) : Result<Method>(program.error());

  bool load(std::initializer_list<float> input) {
    if (!method.ok()) return false;
    const int32_t sizes[2] = {2, 2};
    return method->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), input.begin(),
                             input.size() * sizeof(float)) == Error::Ok;
  }
};

TEST(MethodTraceTest, ReportsEachInstructionAndTheRun) {
  Loaded l;
  ASSERT_TRUE(l.load({1, 1, 1, 1})) << testing::last_log();
  Result<Program>& program = l.program;
  Result<Method>& m = l.method;

  TraceRecord storage[16];
  BufferEventTracer tracer{Span<TraceRecord>(storage)};
  m->set_event_tracer(&tracer);
  ASSERT_EQ(m->execute(), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok);
  m->set_event_tracer(nullptr);
  ASSERT_EQ(m->execute(), Error::Ok);  // not traced

  // Each run: its allocations (the method allocator, then each planned pool: the program needs no scratch), its
  // one instruction, then the run itself.
  Result<MethodMeta> meta = program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  ASSERT_EQ(meta->scratch_bytes(), 0u);
  const size_t pools = meta->num_memory_planned_buffers();
  const size_t per_run = 1 + pools + 2;
  ASSERT_EQ(tracer.records().size(), 2 * per_run);
  EXPECT_EQ(tracer.dropped(), 0u);
  const TraceRecord& bookkeeping = tracer.records()[0];
  EXPECT_EQ(bookkeeping.kind, static_cast<uint8_t>(TraceKind::kAllocation));
  EXPECT_EQ(bookkeeping.op_index, kMethodAllocator);
  EXPECT_EQ(bookkeeping.start, meta->method_allocator_bytes());
  EXPECT_EQ(bookkeeping.instruction, kNoInstruction);
  for (size_t p = 0; p < pools; ++p) {
    const TraceRecord& pool = tracer.records()[1 + p];
    EXPECT_EQ(pool.kind, static_cast<uint8_t>(TraceKind::kAllocation));
    EXPECT_EQ(pool.op_index, kPlannedPool0 + 1 + p);
    EXPECT_EQ(pool.start, *meta->memory_planned_buffer_size(p));
  }
  const TraceRecord& k = tracer.records()[1 + pools];
  EXPECT_EQ(k.kind, static_cast<uint8_t>(TraceKind::kKernel));
  EXPECT_EQ(k.instruction, 0u);
  EXPECT_LE(k.start, k.end);
  const char* overload = nullptr;
  const char* name = m->operator_name(k.op_index, &overload);
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(m->operator_name(static_cast<uint32_t>(m->num_operators()), &overload), nullptr);
  const TraceRecord& run = tracer.records()[2 + pools];
  EXPECT_EQ(run.kind, static_cast<uint8_t>(TraceKind::kRun));
  EXPECT_LE(run.start, k.start);
  EXPECT_GE(run.end, k.end);
  EXPECT_EQ(tracer.records()[per_run].run, 1);
  EXPECT_EQ(tracer.records()[per_run].kind, static_cast<uint8_t>(TraceKind::kAllocation));
}

TEST(MethodTraceTest, AFullBufferDropsWithoutFailingTheRun) {
  Loaded l;
  ASSERT_TRUE(l.load({1, 1, 1, 1})) << testing::last_log();
  Result<Program>& program = l.program;
  Result<Method>& m = l.method;
  TraceRecord storage[1];
  BufferEventTracer tracer{Span<TraceRecord>(storage)};
  m->set_event_tracer(&tracer);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(m->execute(), Error::Ok);
  const size_t per_run = 1 + program->method_meta("forward")->num_memory_planned_buffers() + 2;
  EXPECT_EQ(tracer.records().size(), 1u);
  EXPECT_EQ(tracer.dropped(), 3 * per_run - 1);
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[3], 5.0f);  // the runs still computed
}
TEST(MethodTraceTest, DebugModeKeepsEachKernelsOutputAfterItsTimedEvent) {
  Loaded l;
  const float x[4] = {1, 2, 3, 4};
  ASSERT_TRUE(l.load({1, 2, 3, 4})) << testing::last_log();
  Result<Method>& m = l.method;
  TraceRecord storage[16];
  alignas(16) uint8_t debug[256];
  BufferEventTracer tracer{Span<TraceRecord>(storage), Span<uint8_t>(debug)};
  m->set_event_tracer(&tracer);
  ASSERT_EQ(m->execute(), Error::Ok);
  size_t kernel = 0;
  while (kernel < tracer.records().size() &&
         tracer.records()[kernel].kind != static_cast<uint8_t>(TraceKind::kKernel)) {
    ++kernel;
  }
  ASSERT_LT(kernel + 1, tracer.records().size());
  const TraceRecord& out = tracer.records()[kernel + 1];
  EXPECT_EQ(out.kind, static_cast<uint8_t>(TraceKind::kOutput));
  EXPECT_EQ(out.instruction, 0u);
  EXPECT_EQ(out.pad[0], 0);  // a Tensor, not a list item
  OutputHeader h;
  memcpy(&h, tracer.debug_buffer().data() + out.start, sizeof(h));
  EXPECT_EQ(h.scalar_type, static_cast<uint8_t>(ScalarType::Float));
  ASSERT_EQ(h.dim, 2);
  ASSERT_EQ(h.nbytes, sizeof(x));
  EXPECT_EQ(out.end % 16, 0u);
  // The bytes kept are the method's output as it stood after the kernel.
  EXPECT_EQ(memcmp(tracer.debug_buffer().data() + out.end, m->output(0)->const_data_ptr(), sizeof(x)), 0);
  EXPECT_EQ(tracer.dropped_outputs(), 0u);

  // A buffer too small for the tensor drops it, counted, and the run goes on.
  uint8_t tiny[24];
  BufferEventTracer small{Span<TraceRecord>(storage), Span<uint8_t>(tiny)};
  m->set_event_tracer(&small);
  ASSERT_EQ(m->execute(), Error::Ok);
  EXPECT_EQ(small.dropped_outputs(), 1u);
  EXPECT_EQ(small.debug_buffer().size(), 0u);
  for (const TraceRecord& r : small.records()) EXPECT_NE(r.kind, static_cast<uint8_t>(TraceKind::kOutput));
}
#else
TEST(MethodTraceTest, TheDefaultBuildHasNoTracer) {
  // Compiled out, not merely off: no member, no API (the default runner is byte-for-byte the untraced one).
  EXPECT_FALSE(HasTracer<Method>::value);
}
#endif

}  // namespace
}  // namespace ember
