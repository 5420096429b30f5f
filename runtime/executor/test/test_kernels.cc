// The kernel table the executor's tests link instead of a generated one: an add over Float tensors (enough to run
// the base program), and a kernel that always fails, to see execute() report it.
#include "runtime/kernel/operator_registry.h"

namespace ember {

namespace {

void add_out(KernelContext& ctx, EValue** args) {
  const Tensor& a = args[0]->as_tensor();
  const Tensor& b = args[1]->as_tensor();
  const Tensor& out = args[2]->as_tensor();
  EMBER_KERNEL_CHECK(ctx, a.numel() == b.numel() && a.numel() == out.numel(), InvalidArgument,
                     "test::add.out: %lld, %lld and %lld elements", static_cast<long long>(a.numel()),
                     static_cast<long long>(b.numel()), static_cast<long long>(out.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) {
    out.mutable_data_ptr<float>()[i] = a.const_data_ptr<float>()[i] + b.const_data_ptr<float>()[i];
  }
}

void fail_out(KernelContext& ctx, EValue**) {
  EMBER_KERNEL_CHECK(ctx, false, InvalidArgument, "test::fail.out: always fails");
}

// Sorted by name, as codegen emits it.
constexpr KernelEntry kTable[] = {
    {"test::add.out", add_out, "TTT", 1u << static_cast<int>(ScalarType::Float)},
    {"test::fail.out", fail_out, "TTT", 1u << static_cast<int>(ScalarType::Float)},
};

}  // namespace

Span<const KernelEntry> registered_kernels() { return {kTable, sizeof(kTable) / sizeof(kTable[0])}; }

}  // namespace ember
