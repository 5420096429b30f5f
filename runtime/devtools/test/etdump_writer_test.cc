#include "runtime/devtools/etdump_writer.h"

#include <gtest/gtest.h>
#include <string.h>

#include <string>

#include "schema/etdump_generated.h"

namespace ember {
namespace {

const char* names(const void*, uint32_t op_index, const char** overload) {
  static const char* const kNames[] = {"aten::add", "aten::relu"};
  static const char* const kOverloads[] = {"out", ""};
  if (op_index >= 2) return nullptr;
  *overload = kOverloads[op_index];
  return kNames[op_index];
}

TraceRecord rec(TraceKind kind, uint32_t instruction, uint32_t op, uint64_t start, uint64_t end, uint8_t run) {
  TraceRecord r{};
  r.kind = static_cast<uint8_t>(kind);
  r.instruction = instruction;
  r.op_index = op;
  r.start = start;
  r.end = end;
  r.run = run;
  return r;
}

TEST(EtdumpWriter, WritesASizePrefixedED00WithOneRunDataPerExecute) {
  const TraceRecord records[] = {
      rec(TraceKind::kKernel, 0, 0, 10, 20, 0),
      rec(TraceKind::kKernel, 1, 1, 20, 25, 0),
      rec(TraceKind::kRun, kNoInstruction, kNoOperator, 5, 30, 0),
      rec(TraceKind::kKernel, 0, 0, 40, 48, 1),
      rec(TraceKind::kMove, 1, kNoOperator, 48, 49, 1),
      rec(TraceKind::kRun, kNoInstruction, kNoOperator, 39, 50, 1),
  };
  const std::vector<uint8_t> bytes = write_etdump(ArrayRef<TraceRecord>(records), 0, "forward", {nullptr, names});
  ASSERT_GT(bytes.size(), 12u);
  uint32_t prefix;
  memcpy(&prefix, bytes.data(), 4);
  EXPECT_EQ(prefix + 4, bytes.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()) + 8, 4), "ED00");
  flatbuffers::Verifier v(bytes.data(), bytes.size());
  ASSERT_TRUE(ember_etdump::VerifySizePrefixedETDumpBuffer(v));

  const auto* dump = ember_etdump::GetSizePrefixedETDump(bytes.data());
  ASSERT_EQ(dump->run_data()->size(), 2u);
  const auto* run0 = dump->run_data()->Get(0);
  EXPECT_EQ(run0->name()->str(), "forward");
  EXPECT_EQ(run0->bundled_input_index(), -1);
  ASSERT_EQ(run0->events()->size(), 3u);
  const auto* add = run0->events()->Get(0)->profile_event();
  EXPECT_EQ(add->name()->str(), "aten::add.out");
  EXPECT_EQ(add->instruction_id(), 0);
  EXPECT_EQ(add->chain_index(), 0);
  EXPECT_EQ(add->delegate_debug_id_int(), -1);
  EXPECT_EQ(add->start_time(), 10u);
  EXPECT_EQ(add->end_time(), 20u);
  EXPECT_EQ(run0->events()->Get(1)->profile_event()->name()->str(), "aten::relu");
  const auto* whole = run0->events()->Get(2)->profile_event();
  EXPECT_EQ(whole->name()->str(), "Method::execute");
  EXPECT_EQ(whole->instruction_id(), -1);
  const auto* run1 = dump->run_data()->Get(1);
  ASSERT_EQ(run1->events()->size(), 3u);
  EXPECT_EQ(run1->events()->Get(1)->profile_event()->name()->str(), "MoveCall");
  EXPECT_EQ(run1->events()->Get(0)->allocation_event(), nullptr);
}

TEST(EtdumpWriter, AllocationsAreWrittenOnlyWhenAskedAndNameTheirAllocators) {
  const TraceRecord records[] = {
      rec(TraceKind::kAllocation, kNoInstruction, kMethodAllocator, 1200, 1200, 0),
      rec(TraceKind::kAllocation, kNoInstruction, kPlannedPool0 + 2, 64, 64, 0),
      rec(TraceKind::kKernel, 0, 0, 10, 20, 0),
      rec(TraceKind::kRun, kNoInstruction, kNoOperator, 5, 30, 0),
  };
  const std::vector<uint8_t> plain = write_etdump(ArrayRef<TraceRecord>(records), 0, "forward", {nullptr, names});
  const auto* run = ember_etdump::GetSizePrefixedETDump(plain.data())->run_data()->Get(0);
  EXPECT_EQ(run->events()->size(), 2u);  // the kernel and the run: what ExecuTorch's Inspector reads
  EXPECT_EQ(run->allocators(), nullptr);

  const std::vector<uint8_t> bytes = write_etdump(ArrayRef<TraceRecord>(records), 0, "forward", {nullptr, names},
                                                  EtdumpEvents::kProfileAndAllocations);
  flatbuffers::Verifier v(bytes.data(), bytes.size());
  ASSERT_TRUE(ember_etdump::VerifySizePrefixedETDumpBuffer(v));
  run = ember_etdump::GetSizePrefixedETDump(bytes.data())->run_data()->Get(0);
  ASSERT_EQ(run->events()->size(), 4u);
  const auto* bookkeeping = run->events()->Get(0)->allocation_event();
  ASSERT_NE(bookkeeping, nullptr);
  EXPECT_EQ(run->events()->Get(0)->profile_event(), nullptr);
  EXPECT_EQ(bookkeeping->allocator_id(), 0);
  EXPECT_EQ(bookkeeping->allocation_size(), 1200u);
  const auto* pool = run->events()->Get(1)->allocation_event();
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->allocation_size(), 64u);
  // Every id up to the largest is named, so allocator_id indexes the list.
  ASSERT_EQ(run->allocators()->size(), 4u);
  EXPECT_EQ(run->allocators()->Get(0)->name()->str(), "method allocator");
  EXPECT_EQ(run->allocators()->Get(1)->name()->str(), "temp allocator");
  EXPECT_EQ(run->allocators()->Get(pool->allocator_id())->name()->str(), "planned pool 2");
}

TEST(EtdumpWriter, OutputsBecomeDebugEventsPointingIntoTheDebugBuffer) {
  // What BufferEventTracer keeps for a [2, 3] float output and a two-tensor list: header, sizes, strides, bytes.
  std::vector<uint8_t> debug;
  std::vector<TraceRecord> records;
  auto keep = [&](uint32_t instruction, std::vector<int32_t> sizes, uint8_t item) {
    const size_t at = debug.size();
    OutputHeader h{};
    h.scalar_type = 6;  // Float
    h.dim = static_cast<uint8_t>(sizes.size());
    size_t n = 1;
    for (int32_t s : sizes) n *= static_cast<size_t>(s);
    h.nbytes = n * 4;
    std::vector<int32_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
    debug.resize(at + 48 + ((h.nbytes + 15) & ~uint64_t{15}));
    memcpy(debug.data() + at, &h, sizeof(h));
    memcpy(debug.data() + at + 16, sizes.data(), 4 * sizes.size());
    memcpy(debug.data() + at + 16 + 4 * sizes.size(), strides.data(), 4 * strides.size());
    TraceRecord r = rec(TraceKind::kOutput, instruction, 0, at, at + 48, 0);
    r.pad[0] = item;
    records.push_back(r);
  };
  records.push_back(rec(TraceKind::kKernel, 0, 0, 10, 20, 0));
  keep(0, {2, 3}, 0);
  records.push_back(rec(TraceKind::kKernel, 1, 1, 20, 30, 0));
  keep(1, {4}, 1);
  keep(1, {1, 2}, 2);
  records.push_back(rec(TraceKind::kRun, kNoInstruction, kNoOperator, 5, 31, 0));
  const std::vector<uint8_t> bytes =
      write_etdump(ArrayRef<TraceRecord>(records.data(), records.size()), 0, "forward", {nullptr, names},
                   EtdumpEvents::kProfile, ArrayRef<uint8_t>(debug.data(), debug.size()));
  flatbuffers::Verifier v(bytes.data(), bytes.size());
  ASSERT_TRUE(ember_etdump::VerifySizePrefixedETDumpBuffer(v));
  const auto* run = ember_etdump::GetSizePrefixedETDump(bytes.data())->run_data()->Get(0);
  ASSERT_EQ(run->events()->size(), 5u);  // kernel, its output, kernel, its list, the run
  const auto* first = run->events()->Get(1)->debug_event();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->name()->str(), "aten::add.out");
  EXPECT_EQ(first->instruction_id(), 0);
  ASSERT_EQ(first->debug_entry()->val(), ember_etdump::ValueType::Tensor);
  const auto* t = first->debug_entry()->tensor();
  EXPECT_EQ(t->offset(), 48);
  ASSERT_EQ(t->sizes()->size(), 2u);
  EXPECT_EQ(t->sizes()->Get(1), 3);
  EXPECT_EQ(t->strides()->Get(0), 3);
  EXPECT_EQ(first->debug_entry()->output(), nullptr);  // an intermediate, not a program output
  const auto* list = run->events()->Get(3)->debug_event();
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->debug_entry()->val(), ember_etdump::ValueType::TensorList);
  ASSERT_EQ(list->debug_entry()->tensor_list()->tensors()->size(), 2u);
  EXPECT_EQ(list->debug_entry()->tensor_list()->tensors()->Get(1)->sizes()->Get(1), 2);

  // A record pointing past the buffer is left out, not described.
  const std::vector<uint8_t> cut =
      write_etdump(ArrayRef<TraceRecord>(records.data(), records.size()), 0, "forward", {nullptr, names},
                   EtdumpEvents::kProfile, ArrayRef<uint8_t>(debug.data(), 40));
  EXPECT_EQ(ember_etdump::GetSizePrefixedETDump(cut.data())->run_data()->Get(0)->events()->size(), 3u);
}

TEST(EtdumpWriter, ATruncatedTraceSaysSoInItsLastRunsName) {
  const TraceRecord records[] = {rec(TraceKind::kKernel, 0, 7, 1, 2, 0)};  // op 7: no name known
  const std::vector<uint8_t> bytes = write_etdump(ArrayRef<TraceRecord>(records), 5, "forward", {nullptr, names});
  const auto* dump = ember_etdump::GetSizePrefixedETDump(bytes.data());
  ASSERT_EQ(dump->run_data()->size(), 1u);
  EXPECT_EQ(dump->run_data()->Get(0)->name()->str(), "forward (truncated: 5 events dropped)");
  EXPECT_EQ(dump->run_data()->Get(0)->events()->Get(0)->profile_event()->name()->str(), "operator #7");
}

TEST(EtdumpWriter, NoRecordsIsAnEmptyDump) {
  const std::vector<uint8_t> bytes = write_etdump(ArrayRef<TraceRecord>(), 0, "forward", {nullptr, names});
  flatbuffers::Verifier v(bytes.data(), bytes.size());
  ASSERT_TRUE(ember_etdump::VerifySizePrefixedETDumpBuffer(v));
  EXPECT_EQ(ember_etdump::GetSizePrefixedETDump(bytes.data())->run_data()->size(), 0u);
}

}  // namespace
}  // namespace ember
