#include "runtime/executor/test/test_program.h"

#include <string.h>

namespace ember {
namespace testing {

namespace fb = ember_pte_obj;

namespace {

std::unique_ptr<fb::EValueT> value_of(fb::KernelTypesUnion u) {
  auto v = std::make_unique<fb::EValueT>();
  v->val = std::move(u);
  return v;
}

template <typename T>
fb::KernelTypesUnion wrap(T table) {
  fb::KernelTypesUnion u;
  u.Set(std::move(table));
  return u;
}

fb::TensorT float_2x2(bool planned, uint64_t offset, uint32_t constant) {
  fb::TensorT t;
  t.scalar_type = fb::ScalarType::FLOAT;
  t.sizes = {2, 2};
  t.dim_order = {0, 1};
  t.data_buffer_idx = constant;
  if (planned) {
    t.allocation_info = std::make_unique<fb::AllocationDetailsT>();
    t.allocation_info->memory_id = 1;
    t.allocation_info->memory_offset_low = static_cast<uint32_t>(offset);
  }
  return t;
}

}  // namespace

std::unique_ptr<fb::ProgramT> base_program() {
  auto plan = std::make_unique<fb::ExecutionPlanT>();
  plan->name = "forward";
  auto& v = plan->values;
  v.push_back(value_of(wrap(float_2x2(true, 0, 0))));    // kX
  v.push_back(value_of(wrap(float_2x2(false, 0, 1))));   // kW
  v.push_back(value_of(wrap(float_2x2(true, 16, 0))));   // kOut
  fb::IntT i;
  i.int_val = 2;
  v.push_back(value_of(wrap(i)));  // kInt
  fb::IntListT il;
  il.items = {kInt};
  v.push_back(value_of(wrap(il)));  // kIntList
  fb::BoolT b;
  b.bool_val = true;
  v.push_back(value_of(wrap(b)));  // kBool
  fb::TensorListT tl;
  tl.items = {kX, kW};
  v.push_back(value_of(wrap(tl)));  // kTensorList
  fb::OptionalTensorListT ol;
  ol.items = {-1, kX};
  v.push_back(value_of(wrap(ol)));  // kOptionalTensorList
  fb::DoubleT d;
  d.double_val = 0.5;
  v.push_back(value_of(wrap(d)));  // kDouble
  fb::StringT s;
  s.string_val = "mean";
  v.push_back(value_of(wrap(s)));  // kString
  fb::DoubleListT dl;
  dl.items = {1.0, 2.0};
  v.push_back(value_of(wrap(dl)));  // kDoubleList
  fb::BoolListT bl;
  bl.items = {true, false};
  v.push_back(value_of(wrap(bl)));  // kBoolList
  v.push_back(value_of(wrap(fb::NullT())));  // kNull

  plan->inputs = {kX};
  plan->outputs = {kOut};
  auto op = std::make_unique<fb::OperatorT>();
  op->name = "test::add";
  op->overload = "out";
  plan->operators.push_back(std::move(op));
  fb::KernelCallT call;
  call.op_index = 0;
  call.args = {kX, kW, kOut};
  auto ins = std::make_unique<fb::InstructionT>();
  ins->instr_args.Set(std::move(call));
  auto chain = std::make_unique<fb::ChainT>();
  chain->instructions.push_back(std::move(ins));
  plan->chains.push_back(std::move(chain));
  plan->non_const_buffer_sizes = {0, static_cast<int64_t>(kPoolBytes)};

  auto p = std::make_unique<fb::ProgramT>();
  p->version = 0;
  p->execution_plan.push_back(std::move(plan));
  auto seg = std::make_unique<fb::DataSegmentT>();
  seg->offset = 0;
  seg->size = 16;
  p->segments.push_back(std::move(seg));
  p->constant_segment = std::make_unique<fb::SubsegmentOffsetsT>();
  p->constant_segment->segment_index = 0;
  p->constant_segment->offsets = {0, 0};
  return p;
}

fb::ExecutionPlanT& forward(fb::ProgramT& p) { return *p.execution_plan[0]; }

fb::TensorT& tensor(fb::ProgramT& p, int32_t value) {
  return *forward(p).values[static_cast<size_t>(value)]->val.AsTensor();
}

std::vector<uint8_t> constant_segment_data() {
  const float w[4] = {1, 2, 3, 4};
  std::vector<uint8_t> out(sizeof(w));
  memcpy(out.data(), w, sizeof(w));
  return out;
}

std::vector<uint8_t> serialize(const fb::ProgramT& p) { return serialize(p, constant_segment_data()); }

std::vector<uint8_t> serialize(const fb::ProgramT& p, const std::vector<uint8_t>& segment_data) {
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Program::Pack(builder, &p), fb::ProgramIdentifier());
  const uint8_t* flat = builder.GetBufferPointer();
  const size_t flat_size = builder.GetSize();
  // The extended header goes between the identifier and the rest; offsets inside the flatbuffer are relative,
  // so only the root offset moves. Its 32 bytes keep the flatbuffer's 16-byte alignment.
  constexpr size_t kHeader = extended_header::kLength;
  static_assert(kHeader % 16 == 0 && extended_header::kOffset == 8, "the header sits at byte 8, 16-byte multiple");
  const size_t program_size = flat_size + kHeader;
  const size_t segment_base = (program_size + 15) / 16 * 16;
  std::vector<uint8_t> out(segment_base + segment_data.size(), 0);
  uint32_t root;  // little-endian, as on every target Ember builds for
  memcpy(&root, flat, 4);
  root += kHeader;
  memcpy(out.data(), &root, 4);
  memcpy(out.data() + 4, flat + 4, 4);
  ExtendedHeader header;
  header.present = true;
  header.program_size = program_size;
  header.segment_base_offset = segment_base;
  header.segment_data_size = segment_data.size();
  write_extended_header(header, out.data());
  memcpy(out.data() + 8 + kHeader, flat + 8, flat_size - 8);
  if (!segment_data.empty()) memcpy(out.data() + segment_base, segment_data.data(), segment_data.size());
  return out;
}

std::unique_ptr<fb::ProgramT> with_initial_value() {
  auto p = base_program();
  tensor(*p, testing::kX).data_buffer_idx = 1;
  auto seg = std::make_unique<fb::DataSegmentT>();
  seg->offset = 16;
  seg->size = 16;
  p->segments.push_back(std::move(seg));
  auto list = std::make_unique<fb::SubsegmentOffsetsT>();
  list->segment_index = 1;
  list->offsets = {0, 0};
  p->mutable_data_segments.push_back(std::move(list));
  return p;
}

std::vector<uint8_t> two_segments() {
  std::vector<uint8_t> data = testing::constant_segment_data();
  const float x[4] = {10, 20, 30, 40};
  data.resize(32);
  memcpy(data.data() + 16, x, sizeof(x));
  return data;
}

TestMemory::TestMemory(size_t method_bytes, std::vector<size_t> pools)
    : method_storage(method_bytes + 16),
      method_allocator(method_storage.data() + ((16 - reinterpret_cast<uintptr_t>(method_storage.data()) % 16) % 16),
                       method_bytes),
      planned(Span<Span<uint8_t>>(nullptr, 0)) {
  for (size_t bytes : pools) pool_storage.emplace_back(bytes);
  for (auto& pool : pool_storage) spans.emplace_back(pool.data(), pool.size());
  planned = HierarchicalAllocator(Span<Span<uint8_t>>(spans.data(), spans.size()));
  manager.method_allocator = &method_allocator;
  manager.planned_memory = &planned;
}

}  // namespace testing
}  // namespace ember
