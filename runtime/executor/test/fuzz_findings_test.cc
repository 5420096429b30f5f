// The programs that crashed the runtime before the structural verifier (../shared/fuzz-findings, found by
// libFuzzer with ASan/UBSan at 3b4f0c0: null tables and vectors read after the flatbuffer verifier had accepted
// the file). Each now gets a named error, or, where the damage left a well-formed program, loads and runs.
// The files are passed as arguments (testdata/fuzz_findings).
#include <stdio.h>
#include <string.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace {

std::vector<std::string> g_files;

struct Expected {
  const char* stage;  // "load" (Program::load), "method" (load_method) or "runs"
  ember::Error error;
  const char* log;
};

const std::map<std::string, Expected> kExpected = {
    {"program-crash-1.pte",
     {"load", ember::Error::InvalidProgram, "value 2 needs bytes [16, +1073741888) of a 80-byte constant segment"}},
    {"program-crash-2.pte", {"load", ember::Error::InvalidProgram, "value 2 is tagged Tensor but holds no Tensor"}},
    {"program-crash-3.pte", {"load", ember::Error::InvalidProgram, "value 12 is tagged Tensor but holds no Tensor"}},
    {"program-crash-4.pte",
     {"load", ember::Error::InvalidProgram,
      "int list 7 item 1 refers to value 432345564227567622, which is not an Int"}},
    {"program-crash-5.pte", {"load", ember::Error::InvalidProgram, "int list 11 item 1 refers to value 42"}},
    // Absent list vectors, read as empty lists: the program stays well formed.
    {"program-crash-6.pte", {"runs", ember::Error::Ok, ""}},
    {"program-crash-7.pte", {"runs", ember::Error::Ok, ""}},
    {"program-crash-8.pte", {"load", ember::Error::NotSupported, "output 0 is value 25, which is not a tensor"}},
    {"program-crash-9.pte",
     {"method", ember::Error::InvalidProgram, "(aten::addmm.out): argument 1 is a None, the kernel expects 'T'"}},
    {"program-crash-10.pte", {"load", ember::Error::InvalidProgram, "value 2 is tagged Tensor but holds no Tensor"}},
    // From tests/fuzz:program_fuzz under UBSan: 8-byte vector elements at 4-byte-aligned addresses.
    {"misaligned-int64-constant_offsets.pte",
     {"load", ember::Error::InvalidProgram, "program: constant offsets 0: 8-byte values not 8-byte aligned"}},
    // Its pool sizes are misaligned as well as its int list, and are checked first.
    {"misaligned-int64-int_list.pte", {"load", ember::Error::InvalidProgram, "8-byte values not 8-byte aligned"}},
    {"misaligned-planned-float.pte",
     {"load", ember::Error::InvalidProgram,
      "value 4 is planned at offset 53 of memory id 1, not a multiple of its 4-byte"}},
    {"unplanned-kernel-argument.pte", {"method", ember::Error::NotSupported, "tensor with no storage"}},
    // An Int moved over an IntList that a kernel then read as its items (program_fuzz, CI's seeded prefix).
    {"move-changes-kind.pte", {"load", ember::Error::InvalidProgram, "move 3 -> 4 between values of different kinds"}},
    {"misaligned-int64-pools.pte",
     {"load", ember::Error::InvalidProgram, "planned pool sizes 0: 8-byte values not 8-byte aligned"}},
    // A [double] at a 4-byte boundary (tools/fuzz.sh long, program_fuzz, 73 s into the run at cf3e79c).
    // slice_copy's output planned 4 bytes into its input (tools/fuzz.sh long, program_fuzz, 3.7M executions in
    // at 7749dd9: ASan memcpy-param-overlap); kernels copy with memmove, so it runs on to a later refusal.
    {"overlapping-slice-copy.pte",
     {"execute", ember::Error::InvalidArgument, "instruction 43 (aten::where.self_out) failed: InvalidArgument"}},
    {"misaligned-double-list.pte",
     {"load", ember::Error::InvalidProgram, "list (value) 15: 8-byte values not 8-byte aligned"}},
};

std::vector<uint8_t> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Program::load, then for the first method: meta, load_method with pools sized from the meta, two executes.
// Returns the stage that failed ("runs" if none did) and its error.
std::pair<std::string, ember::Error> run(const std::vector<uint8_t>& bytes) {
  using namespace ember;
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) return {"load", program.error()};
  const char* name = program->get_method_name(0).get();
  Result<MethodMeta> meta = program->method_meta(name);
  if (!meta.ok()) return {"meta", meta.error()};
  std::vector<std::vector<uint8_t>> pools;
  std::vector<Span<uint8_t>> spans;
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    pools.emplace_back(meta->memory_planned_buffer_size(i).get());
  }
  for (auto& p : pools) spans.emplace_back(p.data(), p.size());
  std::vector<uint8_t> method_memory(meta->method_allocator_bytes() + 16);
  MemoryAllocator method_allocator(method_memory.data(), method_memory.size());
  HierarchicalAllocator planned(Span<Span<uint8_t>>(spans.data(), spans.size()));
  std::vector<uint8_t> scratch(meta->scratch_bytes() + 16);
  MemoryAllocator temp(scratch.data(), scratch.size());
  MemoryManager memory{&method_allocator, &planned, &temp};
  Result<Method> method = program->load_method(name, &memory);
  if (!method.ok()) return {"method", method.error()};
  for (int i = 0; i < 2; ++i) {
    const Error e = method->execute();
    if (e != Error::Ok) return {"execute", e};
  }
  return {"runs", Error::Ok};
}

TEST(FuzzFindingsTest, EachIsANamedErrorOrRuns) {
  ASSERT_EQ(g_files.size(), kExpected.size());
  for (const std::string& path : g_files) {
    const std::string file = path.substr(path.rfind('/') + 1);
    SCOPED_TRACE(file);
    const auto it = kExpected.find(file);
    ASSERT_NE(it, kExpected.end());
    ember::testing::clear_log();
    const auto got = run(read(path));
    EXPECT_EQ(got.first, it->second.stage) << ember::testing::last_log();
    EXPECT_EQ(got.second, it->second.error);
    EXPECT_NE(ember::testing::last_log().find(it->second.log), std::string::npos) << ember::testing::last_log();
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) g_files.push_back(argv[i]);
  return RUN_ALL_TESTS();
}
