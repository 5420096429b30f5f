// Small programs built by hand for the executor's tests: a valid base program as a mutable object tree
// (flatbuffers' object API), which each test bends in one place before serializing it. That reaches every
// refusal site without going through the exporter, so an exporter bug cannot mask a runtime one.
#pragma once

#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/executor/test/program_object_api.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"
#include "schema/extended_header.h"

namespace ember {
namespace testing {

// Value indices of the base program's method "forward": out = test::add.out(x, w) with x an input in pool 1, w
// a constant [1, 2, 3, 4] and out the output in pool 1; the other values exist so each kind is present.
enum BaseValue : int32_t {
  kX = 0,
  kW,
  kOut,
  kInt,
  kIntList,
  kBool,
  kTensorList,
  kOptionalTensorList,
  kDouble,
  kString,
  kDoubleList,
  kBoolList,
  kNull,
  kNumBaseValues,
};

constexpr size_t kPoolBytes = 32;  // x at 0, out at 16: two Float [2, 2]

std::unique_ptr<ember_pte_obj::ProgramT> base_program();
ember_pte_obj::ExecutionPlanT& forward(ember_pte_obj::ProgramT& p);
ember_pte_obj::TensorT& tensor(ember_pte_obj::ProgramT& p, int32_t value);

// A .pte file: the flatbuffer with an extended header at byte 8 and `segment_data` after it (16-byte aligned).
std::vector<uint8_t> serialize(const ember_pte_obj::ProgramT& p, const std::vector<uint8_t>& segment_data);
// The base program's constant segment: w as four Floats.
std::vector<uint8_t> constant_segment_data();
std::vector<uint8_t> serialize(const ember_pte_obj::ProgramT& p);

// The base program with x a mutable buffer whose initial value {10, 20, 30, 40} is list 0, entry 1, in segment 1;
// serialize it with two_segments().
std::unique_ptr<ember_pte_obj::ProgramT> with_initial_value();
std::vector<uint8_t> two_segments();

// Everything a method runs in, sized generously or as asked. The method allocator's buffer is 16-byte aligned,
// as MethodMeta's prediction assumes.
struct TestMemory {
  explicit TestMemory(size_t method_bytes = 4096, std::vector<size_t> pools = {kPoolBytes});
  std::vector<uint8_t> method_storage;
  std::vector<std::vector<uint8_t>> pool_storage;
  std::vector<Span<uint8_t>> spans;
  MemoryAllocator method_allocator;
  HierarchicalAllocator planned;
  MemoryManager manager;
};

}  // namespace testing
}  // namespace ember
