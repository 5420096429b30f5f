// Method::execute's event tracer hooks (runtime/executor/execute_trace.h). Run in both builds: with
// --config=profiling it checks what execute() reports; in the default build, that Method has no tracer at all.
#include <type_traits>
#include <utility>

#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
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

TEST(MethodTraceTest, ReportsEachInstructionAndTheRun) {
  const std::vector<uint8_t> bytes = testing::serialize(*testing::base_program());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << testing::last_log();
  testing::TestMemory memory;
  Result<Method> m = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << testing::last_log();
  const float x[4] = {1, 1, 1, 1};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);

  TraceRecord storage[8];
  BufferEventTracer tracer{Span<TraceRecord>(storage)};
  m->set_event_tracer(&tracer);
  ASSERT_EQ(m->execute(), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok);
  m->set_event_tracer(nullptr);
  ASSERT_EQ(m->execute(), Error::Ok);  // not traced

  // One instruction per run, then the run: [kernel, run, kernel, run].
  ASSERT_EQ(tracer.records().size(), 4u);
  EXPECT_EQ(tracer.dropped(), 0u);
  const TraceRecord& k = tracer.records()[0];
  EXPECT_EQ(k.kind, static_cast<uint8_t>(TraceKind::kKernel));
  EXPECT_EQ(k.instruction, 0u);
  EXPECT_LE(k.start, k.end);
  const char* overload = nullptr;
  const char* name = m->operator_name(k.op_index, &overload);
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(m->operator_name(static_cast<uint32_t>(m->num_operators()), &overload), nullptr);
  const TraceRecord& run = tracer.records()[1];
  EXPECT_EQ(run.kind, static_cast<uint8_t>(TraceKind::kRun));
  EXPECT_LE(run.start, k.start);
  EXPECT_GE(run.end, k.end);
  EXPECT_EQ(tracer.records()[2].run, 1);
}

TEST(MethodTraceTest, AFullBufferDropsWithoutFailingTheRun) {
  const std::vector<uint8_t> bytes = testing::serialize(*testing::base_program());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  testing::TestMemory memory;
  Result<Method> m = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok());
  const float x[4] = {1, 1, 1, 1};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  TraceRecord storage[1];
  BufferEventTracer tracer{Span<TraceRecord>(storage)};
  m->set_event_tracer(&tracer);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(m->execute(), Error::Ok);
  EXPECT_EQ(tracer.records().size(), 1u);
  EXPECT_EQ(tracer.dropped(), 5u);
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[3], 5.0f);  // the runs still computed
}
#else
TEST(MethodTraceTest, TheDefaultBuildHasNoTracer) {
  // Compiled out, not merely off: no member, no API (the default runner is byte-for-byte the untraced one).
  EXPECT_FALSE(HasTracer<Method>::value);
}
#endif

}  // namespace
}  // namespace ember
