// for_each_constant_read_whole: which constants a method's instructions read whole, on hand-built programs.
#include "runtime/executor/constant_use.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/test/test_program.h"

namespace ember {
namespace {

namespace fb = ember_pte_obj;
using testing::base_program;
using testing::forward;
using testing::kOut;
using testing::kTensorList;
using testing::kW;
using testing::kX;
using testing::serialize;

using Range = std::pair<const void*, size_t>;

// The ranges visited for `method` of the program `p` serializes to, and the constant w's bytes in that program.
struct Visited {
  Error error;
  std::vector<Range> ranges;
  Range w;
};

Visited visit(const fb::ProgramT& p, const char* method = "forward") {
  const std::vector<uint8_t> bytes = serialize(p);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  EXPECT_TRUE(program.ok());
  Visited out{Error::Ok, {}, {program->constant_data(1, 16).get(), 16}};
  out.error = for_each_constant_read_whole(
      *program, method,
      [](const void* data, size_t nbytes, void* context) {
        static_cast<std::vector<Range>*>(context)->emplace_back(data, nbytes);
      },
      &out.ranges);
  return out;
}

void add_call(fb::ProgramT& p, const char* name, std::vector<int32_t> args) {
  auto op = std::make_unique<fb::OperatorT>();
  op->name = name;
  op->overload = "out";
  forward(p).operators.push_back(std::move(op));
  fb::KernelCallT call;
  call.op_index = static_cast<int32_t>(forward(p).operators.size() - 1);
  call.args = std::move(args);
  auto ins = std::make_unique<fb::InstructionT>();
  ins->instr_args.Set(std::move(call));
  forward(p).chains[0]->instructions.push_back(std::move(ins));
}

TEST(ConstantUse, AConstantArgumentIsReadWhole) {
  Visited v = visit(*base_program());  // out = test::add.out(x, w)
  ASSERT_EQ(v.error, Error::Ok);
  ASSERT_EQ(v.ranges.size(), 1u);
  EXPECT_EQ(v.ranges[0], v.w);
}

TEST(ConstantUse, ATableOnlyGatheredIsLeftOut) {
  auto p = base_program();
  forward(*p).operators[0]->name = "aten::embedding";
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {kW, kX, kOut};
  Visited v = visit(*p);
  ASSERT_EQ(v.error, Error::Ok);
  EXPECT_TRUE(v.ranges.empty());
  // The quantized embeddings gather too; other operators named alike do not.
  EXPECT_TRUE(gathers_rows_of_first_argument("ember_llm::embedding_int8"));
  EXPECT_TRUE(gathers_rows_of_first_argument("ember_llm::embedding_4bit"));
  EXPECT_FALSE(gathers_rows_of_first_argument("aten::embedding_bag"));
  EXPECT_FALSE(gathers_rows_of_first_argument("aten::index_select"));
}

TEST(ConstantUse, AGatheredTableAlsoReadWholeIsVisited) {
  // A tied embedding: the same weight gathered by the embedding and multiplied by the output head.
  auto p = base_program();
  forward(*p).operators[0]->name = "aten::embedding";
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {kW, kX, kOut};
  add_call(*p, "aten::mm", {kX, kW, kOut});
  Visited v = visit(*p);
  ASSERT_EQ(v.ranges.size(), 1u);
  EXPECT_EQ(v.ranges[0], v.w);
}

TEST(ConstantUse, ConstantsInAListAreVisited) {
  auto p = base_program();
  forward(*p).values[kTensorList]->val.AsTensorList()->items = {kX, kW};
  add_call(*p, "aten::cat", {kTensorList, kOut});
  Visited v = visit(*p);
  ASSERT_EQ(v.ranges.size(), 2u);  // once by add, once in cat's list: visits are per read
  EXPECT_EQ(v.ranges[0], v.w);
  EXPECT_EQ(v.ranges[1], v.w);
}

TEST(ConstantUse, PlannedAndInputTensorsAreNotConstants) {
  auto p = base_program();
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {kX, kX, kOut};
  Visited v = visit(*p);
  ASSERT_EQ(v.error, Error::Ok);
  EXPECT_TRUE(v.ranges.empty());
}

TEST(ConstantUse, AnUnknownMethodIsNotFound) {
  EXPECT_EQ(visit(*base_program(), "decode").error, Error::NotFound);
  EXPECT_EQ(ember::testing::last_log(), "the program has no method 'decode' (it has 1)");
}

}  // namespace
}  // namespace ember
