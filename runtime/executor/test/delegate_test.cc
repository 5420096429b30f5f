// Delegate calls end to end over hand-built programs (test_program.h) and the backends of test_backends.cc: the
// blob read inline or from a segment, freed after init when the backend allows it, init/execute/destroy in
// order, and a refusal, naming the delegate, for every delegate field the runtime reads.
#include <string.h>

#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/test_backends.h"
#include "runtime/executor/test/test_program.h"

namespace ember {
namespace {

namespace fb = ember_pte_obj;
using testing::base_program;
using testing::forward;
using testing::TestMemory;

// Bytes in memory whose Backend segments count their frees, to see a blob given back after init.
class CountingLoader final : public DataLoader {
 public:
  explicit CountingLoader(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  Result<FreeableBuffer> load(uint64_t offset, uint64_t size, const SegmentInfo& info) override {
    EMBER_CHECK_OR_RETURN_ERROR(offset <= bytes_.size() && size <= bytes_.size() - offset, InvalidArgument,
                                "CountingLoader: out of range");
    if (info.type != SegmentInfo::Type::Backend) return FreeableBuffer(bytes_.data() + offset, size);
    ++backend_loads;
    return FreeableBuffer(bytes_.data() + offset, size, &count_free, this);
  }
  Error load_into(uint64_t offset, uint64_t size, const SegmentInfo&, void* destination) override {
    memcpy(destination, bytes_.data() + offset, size);
    return Error::Ok;
  }
  Result<uint64_t> size() const override { return static_cast<uint64_t>(bytes_.size()); }
  int backend_loads = 0;
  int backend_frees = 0;

 private:
  static void count_free(void* self, const void*, size_t) { ++static_cast<CountingLoader*>(self)->backend_frees; }
  std::vector<uint8_t> bytes_;
};

// The base program with its add replaced by delegate 0 over (x, out), the blob inline or in segment 1.
std::unique_ptr<fb::ProgramT> delegated(fb::DataLocation where, const std::vector<uint8_t>& blob,
                                        const char* backend = "TestOffset") {
  auto p = base_program();
  fb::DelegateCallT call;
  call.delegate_index = 0;
  call.args = {testing::kX, testing::kOut};
  forward(*p).chains[0]->instructions[0]->instr_args.Set(std::move(call));
  auto d = std::make_unique<fb::BackendDelegateT>();
  d->id = backend;
  d->processed = std::make_unique<fb::BackendDelegateDataReferenceT>();
  d->processed->location = where;
  auto spec = std::make_unique<fb::CompileSpecT>();
  spec->key = "mode";
  spec->value = {1, 2};
  d->compile_specs.push_back(std::move(spec));
  if (where == fb::DataLocation::INLINE) {
    auto data = std::make_unique<fb::BackendDelegateInlineDataT>();
    data->data = blob;
    p->backend_delegate_data.push_back(std::move(data));
    d->processed->index = 0;
  } else {
    auto seg = std::make_unique<fb::DataSegmentT>();
    seg->offset = 16;
    seg->size = blob.size();
    p->segments.push_back(std::move(seg));
    d->processed->index = 1;
  }
  forward(*p).delegates.push_back(std::move(d));
  return p;
}

std::vector<uint8_t> file(const fb::ProgramT& p, const std::vector<uint8_t>& blob) {
  std::vector<uint8_t> data = testing::constant_segment_data();
  data.resize(16);
  data.insert(data.end(), blob.begin(), blob.end());
  return testing::serialize(p, data);
}

bool logged(const char* text) { return ember::testing::last_log().find(text) != std::string::npos; }

struct Loaded {
  explicit Loaded(const fb::ProgramT& p, const std::vector<uint8_t>& blob) : loader(file(p, blob)) {
    Result<Program> r = Program::load(&loader);
    EXPECT_TRUE(r.ok()) << ember::testing::last_log();
    if (r.ok()) program.reset(new Program(static_cast<Program&&>(r.get())));
  }
  Result<Method> load(TestMemory& memory) {
    ember::testing::clear_log();
    return program->load_method("forward", &memory.manager);
  }
  CountingLoader loader;
  std::unique_ptr<Program> program;
};

void expect_runs(Method& m, float c) {
  const float x[4] = {1, 2, 3, 4};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m.set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m.execute(), Error::Ok) << ember::testing::last_log();
  const float* out = m.output(0)->const_data_ptr<float>();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], x[i] + c);
}

TEST(DelegateTest, InlineBlobRunsAndIsDestroyedWithTheMethod) {
  testing::TestOffsetCounters& c = testing::test_offset_counters();
  c = {};
  const auto blob = testing::offset_blob(0.5f);
  Loaded r(*delegated(fb::DataLocation::INLINE, blob), {});
  {
    TestMemory memory;
    Result<Method> m = r.load(memory);
    ASSERT_TRUE(m.ok()) << ember::testing::last_log();
    EXPECT_EQ(c.inits, 1);
    EXPECT_EQ(c.last_specs, 1u);
    expect_runs(*m, 0.5f);
    expect_runs(*m, 0.5f);
    EXPECT_EQ(c.destroys, 0);
    Method moved(static_cast<Method&&>(m.get()));  // a moved-from method destroys nothing
    EXPECT_EQ(c.destroys, 0);
  }
  EXPECT_EQ(c.destroys, 1);
  EXPECT_EQ(r.loader.backend_loads, 0);  // inline: read in place from the program's flatbuffer
}

TEST(DelegateTest, SegmentBlobIsFreedAfterInit) {
  testing::TestOffsetCounters& c = testing::test_offset_counters();
  c = {};
  const auto blob = testing::offset_blob(-2.0f);
  Loaded r(*delegated(fb::DataLocation::SEGMENT, blob), blob);
  TestMemory memory;
  Result<Method> m = r.load(memory);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  EXPECT_EQ(r.loader.backend_loads, 1);
  EXPECT_EQ(r.loader.backend_frees, 1);  // TestOffset does not keep its blob
  expect_runs(*m, -2.0f);
}

TEST(DelegateTest, BackendStateComesFromTheMethodAllocator) {
  testing::TestOffsetCounters& c = testing::test_offset_counters();
  c = {};
  Loaded r(*delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f)), {});
  TestMemory memory;
  Result<Method> m = r.load(memory);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  // Everything after init's own allocation went to the method allocator too: the delegate's arguments.
  EXPECT_GE(memory.method_allocator.used_bytes(), c.allocator_bytes);
  EXPECT_GT(c.allocator_bytes, testing::kTestOffsetStateBytes);
}

TEST(DelegateTest, MissingBackendNamesItAndTheDelegate) {
  Loaded r(*delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f), "NoSuchBackend"), {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::NotFound);
  EXPECT_TRUE(
      logged("method 'forward' delegate 0: backend 'NoSuchBackend' is not in this build (2 backends "
             "registered)"))
      << ember::testing::last_log();
}

TEST(DelegateTest, InitRefusalNamesTheBackend) {
  Loaded r(*delegated(fb::DataLocation::INLINE, {'b', 'a', 'd', '!', 0, 0, 0, 0}), {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::DelegateInvalidCompatibility);
  EXPECT_TRUE(logged("backend 'TestOffset' refused its 8-byte blob")) << ember::testing::last_log();
}

TEST(DelegateTest, InitFailureAfterAnotherDelegateDestroysIt) {
  testing::TestOffsetCounters& c = testing::test_offset_counters();
  c = {};
  // Two calls, the second to a delegate whose blob init refuses: the first delegate is destroyed.
  auto p = delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f));
  auto bad = std::make_unique<fb::BackendDelegateT>(*forward(*p).delegates[0]);
  bad->processed = std::make_unique<fb::BackendDelegateDataReferenceT>();
  bad->processed->location = fb::DataLocation::INLINE;
  bad->processed->index = 1;
  forward(*p).delegates.push_back(std::move(bad));
  auto data = std::make_unique<fb::BackendDelegateInlineDataT>();
  data->data = {'n', 'o', 'p', 'e'};
  p->backend_delegate_data.push_back(std::move(data));
  fb::DelegateCallT call;
  call.delegate_index = 1;
  call.args = {testing::kOut, testing::kOut};
  auto ins = std::make_unique<fb::InstructionT>();
  ins->instr_args.Set(std::move(call));
  forward(*p).chains[0]->instructions.push_back(std::move(ins));
  Loaded r(*p, {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::DelegateInvalidCompatibility);
  EXPECT_EQ(c.inits, 1);
  EXPECT_EQ(c.destroys, 1);
}

TEST(DelegateTest, ExecuteFailureNamesTheDelegate) {
  Loaded r(*delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f, /*fail_at_execute=*/true)), {});
  TestMemory memory;
  Result<Method> m = r.load(memory);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  ember::testing::clear_log();
  EXPECT_EQ(m->execute(), Error::InvalidState);
  // The backend's own line names delegate and backend (run_delegate); the executor's last one the instruction.
  EXPECT_TRUE(logged("method 'forward' instruction 0 (delegate) failed: InvalidState")) << ember::testing::last_log();
}

// MethodMeta counts the delegates' records and the backend's state (TestOffset's init_bytes): a method allocator
// of exactly method_allocator_bytes() holds the method, with at most the 15 bytes of alignment slack per backend.
TEST(DelegateTest, MethodMetaPredictsTheDelegatesMemory) {
  for (fb::DataLocation where : {fb::DataLocation::INLINE, fb::DataLocation::SEGMENT}) {
    const auto blob = testing::offset_blob(1.0f);
    Loaded r(*delegated(where, blob), blob);
    Result<MethodMeta> meta = r.program->method_meta("forward");
    ASSERT_TRUE(meta.ok()) << ember::testing::last_log();
    size_t scratch = 0;
    Result<size_t> core = Method::bookkeeping_bytes(r.program->find_plan("forward").get(), &scratch);
    ASSERT_TRUE(core.ok());
    EXPECT_GT(meta->method_allocator_bytes(), core.get() + testing::kTestOffsetStateBytes);
    TestMemory memory(meta->method_allocator_bytes());
    Result<Method> m = r.load(memory);
    ASSERT_TRUE(m.ok()) << ember::testing::last_log();
    EXPECT_LE(memory.method_allocator.used_bytes(), meta->method_allocator_bytes());
    EXPECT_LE(meta->method_allocator_bytes() - memory.method_allocator.used_bytes(), 15u);
  }
}

TEST(DelegateTest, NoMethodAllocatorRoomForTheBackend) {
  Loaded r(*delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f)), {});
  // Enough for the core's bookkeeping, not for the delegate records and the backend's state.
  TestMemory probe;
  ASSERT_TRUE(r.load(probe).ok());
  size_t scratch = 0;
  Result<size_t> core = Method::bookkeeping_bytes(r.program->find_plan("forward").get(), &scratch);
  ASSERT_TRUE(core.ok());
  TestMemory memory(core.get());
  EXPECT_EQ(r.load(memory).error(), Error::MemoryAllocationFailed);
}

// Every field of a delegate the runtime reads, refused by name when absent or out of range.
TEST(DelegateTest, RefusesAbsentId) {
  auto p = delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f), "");
  Loaded r(*p, {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::InvalidProgram);
  EXPECT_TRUE(logged("method 'forward' delegate 0 has no backend id")) << ember::testing::last_log();
}

TEST(DelegateTest, RefusesAbsentProcessedReference) {
  auto p = delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f));
  forward(*p).delegates[0]->processed.reset();
  Loaded r(*p, {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::InvalidProgram);
  EXPECT_TRUE(logged("delegate 0 (backend 'TestOffset') has no processed data reference"))
      << ember::testing::last_log();
}

TEST(DelegateTest, RefusesInlineIndexOutOfRange) {
  auto p = delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f));
  forward(*p).delegates[0]->processed->index = 3;
  Loaded r(*p, {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::InvalidProgram);
  EXPECT_TRUE(logged("delegate 0 (backend 'TestOffset'): inline data 3 out of range (1 entries)"))
      << ember::testing::last_log();
}

TEST(DelegateTest, RefusesInlineDataWithoutBytes) {
  auto p = delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f));
  p->backend_delegate_data[0] = std::make_unique<fb::BackendDelegateInlineDataT>();  // no data vector
  Loaded r(*p, {});
  TestMemory memory;
  const Error e = r.load(memory).error();
  // flatc's object API writes an empty vector rather than none: then the backend refuses 0 bytes by name.
  EXPECT_TRUE(e == Error::InvalidProgram || e == Error::DelegateInvalidCompatibility) << error_name(e);
  EXPECT_TRUE(logged("inline data 0 has no bytes") || logged("refused its 0-byte blob")) << ember::testing::last_log();
}

TEST(DelegateTest, RefusesSegmentIndexOutOfRange) {
  const auto blob = testing::offset_blob(1.0f);
  auto p = delegated(fb::DataLocation::SEGMENT, blob);
  forward(*p).delegates[0]->processed->index = 9;
  Loaded r(*p, blob);
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::InvalidProgram);
  EXPECT_TRUE(logged("delegate 0 (backend 'TestOffset'): segment 9 out of range (2 segments)"))
      << ember::testing::last_log();
}

TEST(DelegateTest, RefusesUnknownLocation) {
  auto p = delegated(fb::DataLocation::INLINE, testing::offset_blob(1.0f));
  forward(*p).delegates[0]->processed->location = static_cast<fb::DataLocation>(7);
  Loaded r(*p, {});
  TestMemory memory;
  EXPECT_EQ(r.load(memory).error(), Error::InvalidProgram);
  EXPECT_TRUE(logged("delegate 0 (backend 'TestOffset'): unknown data location 7")) << ember::testing::last_log();
}

TEST(DelegateTest, SegmentOutsideTheFileRefusedAtProgramLoad) {
  const auto blob = testing::offset_blob(1.0f);
  auto p = delegated(fb::DataLocation::SEGMENT, blob);
  p->segments[1]->size = 4096;
  CountingLoader loader(file(*p, blob));
  ember::testing::clear_log();
  EXPECT_EQ(Program::load(&loader).error(), Error::InvalidProgram);
  EXPECT_TRUE(logged("segment 1 [16, +4096) lies outside")) << ember::testing::last_log();
}

}  // namespace
}  // namespace ember
