// The kernel table the executor's tests link instead of a generated one: an add over Float tensors (enough to run
// the base program), a kernel that always fails, to see execute() report it, and one with a prepare step.
#include "runtime/executor/prepare_support.h"
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

// test::scaled.out(a, b, out): out = (a + b) * 2, through a prepare step: the 2 is state prepare wrote, and a is
// staged in scratch first, so the test sees both memories planned, handed over and used. Its prepare refuses
// operands whose shapes differ from out's, which execute then need not check, and a b that is not constant data
// (as a kernel that derives constants from its weights at load must).
// It also asks for the same scratch again per extra thread (as a kernel staging a copy per thread would), so the
// tests see MethodMeta::scratch_bytes(threads) and a load for threads take it.
KernelMemory scaled_memory(const KernelArgs& args) {
  size_t n = 1;
  for (int32_t s : args.sizes(0)) n *= static_cast<size_t>(s);
  return {sizeof(float), n * sizeof(float), n * sizeof(float)};
}

Error scaled_prepare(const KernelArgs& args, void* state) {
  for (size_t i = 0; i < 2; ++i) {
    const ArrayRef<int32_t> a = args.sizes(i), out = args.sizes(2);
    bool same = a.size() == out.size();
    for (size_t d = 0; same && d < a.size(); ++d) same = a[d] == out[d];
    EMBER_CHECK_OR_RETURN_ERROR(same, InvalidArgument, "test::scaled.out: operand %zu's shape differs from out's", i);
  }
  EMBER_CHECK_OR_RETURN_ERROR(args.is_constant(1) && !args.is_constant(0) && !args.is_constant(2), InvalidArgument,
                              "test::scaled.out: b must be constant data, a and out must not");
  *static_cast<float*>(state) = 2.0f;
  return Error::Ok;
}

void scaled_out(KernelContext& ctx, EValue** args) {
  const Tensor& a = args[0]->as_tensor();
  const Tensor& b = args[1]->as_tensor();
  Tensor& out = args[2]->as_mutable_tensor();
  const size_t n = static_cast<size_t>(out.numel());
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= n * sizeof(float), MemoryAllocationFailed,
                     "test::scaled.out: %zu bytes of scratch, needs %zu", ctx.scratch().size(), n * sizeof(float));
  float* staged = reinterpret_cast<float*>(ctx.scratch().data());
  for (size_t i = 0; i < n; ++i) staged[i] = a.const_data_ptr<float>()[i];
  const float scale = *ctx.state<float>();
  for (size_t i = 0; i < n; ++i) out.mutable_data_ptr<float>()[i] = (staged[i] + b.const_data_ptr<float>()[i]) * scale;
}

// Sorted by name, as codegen emits it.
constexpr uint32_t kFloat = 1u << static_cast<int>(ScalarType::Float);
constexpr KernelEntry kTable[] = {
    {"test::add.out", add_out, "TTT", kFloat, nullptr, nullptr},
    {"test::fail.out", fail_out, "TTT", kFloat, nullptr, nullptr},
    {"test::scaled.out", scaled_out, "TTT", kFloat, scaled_memory, scaled_prepare},
};

}  // namespace

Span<const KernelEntry> registered_kernels() { return {kTable, sizeof(kTable) / sizeof(kTable[0])}; }
const PrepareSupport* prepare_support() { return &kPrepareSupport; }
// delegate_support() comes from test_no_backends.cc or test_backends.cc.

}  // namespace ember
