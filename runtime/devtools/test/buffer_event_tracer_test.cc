#include "runtime/devtools/buffer_event_tracer.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(BufferEventTracer, RecordsInstructionsThenTheRun) {
  TraceRecord storage[8];
  BufferEventTracer t{Span<TraceRecord>(storage)};
  t.instruction(TraceKind::kKernel, 0, 0, 3, 100, 150);
  t.instruction(TraceKind::kMove, 0, 1, kNoOperator, 150, 151);
  t.run(90, 160);
  t.instruction(TraceKind::kKernel, 0, 0, 3, 200, 240);
  ASSERT_EQ(t.records().size(), 4u);
  EXPECT_EQ(t.dropped(), 0u);
  EXPECT_EQ(t.records()[0].op_index, 3u);
  EXPECT_EQ(t.records()[0].end - t.records()[0].start, 50u);
  EXPECT_EQ(t.records()[1].kind, static_cast<uint8_t>(TraceKind::kMove));
  EXPECT_EQ(t.records()[2].instruction, kNoInstruction);
  EXPECT_EQ(t.records()[2].run, 0);
  EXPECT_EQ(t.records()[3].run, 1);  // the second execute()
}

TEST(BufferEventTracer, AnAllocationKeepsItsAllocatorAndBytesInTheRunItPrecedes) {
  TraceRecord storage[4];
  BufferEventTracer t{Span<TraceRecord>(storage)};
  t.run(0, 1);
  t.allocation(kPlannedPool0 + 1, uint64_t{5} << 33);  // more than 32 bits of bytes survive
  ASSERT_EQ(t.records().size(), 2u);
  const TraceRecord& a = t.records()[1];
  EXPECT_EQ(a.kind, static_cast<uint8_t>(TraceKind::kAllocation));
  EXPECT_EQ(a.op_index, kPlannedPool0 + 1);
  EXPECT_EQ(a.start, uint64_t{5} << 33);
  EXPECT_EQ(a.instruction, kNoInstruction);
  EXPECT_EQ(a.run, 1);  // the run after the first: allocations come before a run's instructions
}

TEST(BufferEventTracer, StopsWhenFullAndCountsWhatItDropped) {
  TraceRecord storage[3];
  BufferEventTracer t{Span<TraceRecord>(storage)};
  for (uint32_t i = 0; i < 10; ++i) t.instruction(TraceKind::kKernel, 0, i, 0, i, i + 1);
  t.run(0, 11);
  ASSERT_EQ(t.records().size(), 3u);
  EXPECT_EQ(t.dropped(), 8u);
  EXPECT_EQ(t.records()[2].instruction, 2u);  // the first events are kept
  t.reset();
  EXPECT_EQ(t.records().size(), 0u);
  EXPECT_EQ(t.dropped(), 0u);
}

TEST(BufferEventTracer, AnEmptyBufferDropsEverythingWithoutWriting) {
  BufferEventTracer t{Span<TraceRecord>()};
  t.instruction(TraceKind::kKernel, 0, 0, 0, 1, 2);
  t.run(0, 3);
  EXPECT_EQ(t.records().size(), 0u);
  EXPECT_EQ(t.dropped(), 2u);
  EXPECT_EQ(t.capacity(), 0u);
}

}  // namespace
}  // namespace ember
