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
      rec(TraceKind::kKernel, 0, 0, 10, 20, 0), rec(TraceKind::kKernel, 1, 1, 20, 25, 0),
      rec(TraceKind::kRun, kNoInstruction, kNoOperator, 5, 30, 0), rec(TraceKind::kKernel, 0, 0, 40, 48, 1),
      rec(TraceKind::kMove, 1, kNoOperator, 48, 49, 1), rec(TraceKind::kRun, kNoInstruction, kNoOperator, 39, 50, 1),
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
