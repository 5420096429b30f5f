// A kernel's prepare step (TFLite Micro's Prepare, CMSIS-NN's buffer-size functions): what a kernel may declare
// besides its compute function, and the view of an instruction's arguments it works from.
//
// `memory` says, from argument kinds, dtypes, shapes and scalars alone, how many bytes the kernel keeps for the
// method's life (`state`: geometry, requantization multipliers, packed constants) and how many it needs during
// one call (`scratch`). It runs over the program itself when MethodMeta predicts a method's memory, before any
// memory exists, and again at Method::load; the two see the same arguments, so prediction and load agree.
// `prepare` runs once per instruction at Method::load, over the loaded arguments, after their kinds and dtypes
// were checked: it checks shapes and fills the state. The kernel's execute then does only the arithmetic.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace ember {

// An instruction's arguments (every schema argument, then the return), read-only. Argument kinds were checked
// against the kernel's signature before any of this is called, so a kernel may read an argument as the kind its
// schema says (an optional one may also be None).
class KernelArgs {
 public:
  virtual size_t size() const = 0;
  virtual Tag tag(size_t i) const = 0;
  // Tensors.
  virtual ScalarType dtype(size_t i) const = 0;
  virtual ArrayRef<int32_t> sizes(size_t i) const = 0;
  // Scalars: an Int, Double or Bool argument.
  virtual int64_t to_int(size_t i) const = 0;
  virtual double to_double(size_t i) const = 0;
  virtual bool to_bool(size_t i) const = 0;
  // Int lists.
  virtual size_t list_size(size_t i) const = 0;
  virtual int64_t list_item(size_t i, size_t k) const = 0;
  // The loaded tensor, for a prepare step that reads constant data (weight scales...); null when arguments are
  // read from the program (the `memory` function never needs data).
  virtual const Tensor* tensor(size_t i) const = 0;
  // Whether tensor argument i holds the program's constant data, which is already valid at load and never changes
  // (weights, scales, biases). Anything else is planned or caller memory whose contents only exist at execute, so
  // a prepare step that derives constants from a tensor's data must refuse a tensor that is not constant.
  virtual bool is_constant(size_t i) const = 0;
  // Whether every tensor argument keeps its shape, and stays the same tensor, for every execute of this method: each
  // is static (no bounded-dynamic shape a kernel could resize) and the method has no instruction that replaces a
  // value (MoveCall). A prepare step may then check the arguments' shapes once, at load, and let execute trust
  // what it recorded, as TFLite Micro's Eval trusts what Prepare checked. False when unsure (the default for a
  // direct caller, which may hand execute other tensors than prepare saw).
  virtual bool shapes_fixed() const = 0;

 protected:
  // Never deleted through this type (nothing here is on the heap); a non-virtual destructor keeps operator
  // delete out of bare-metal images.
  ~KernelArgs() = default;
};

struct KernelMemory {
  size_t state = 0;    // bytes kept from load to the method's end, 16-byte aligned
  size_t scratch = 0;  // bytes usable during one call, 16-byte aligned
  // Bytes more for each thread beyond the first, 16-byte aligned, for a kernel whose threads each need a slice of
  // their own (a depthwise convolution's bordered plane). A method loaded for T threads (MemoryManager::threads)
  // hands it scratch + (T - 1) * scratch_per_thread; one loaded for fewer runs it on as many threads as it has
  // slices for (KernelContext::scratch_slices).
  size_t scratch_per_thread = 0;
};

// Bytes rounded up to whole 16-byte units, the unit kernel state and scratch are planned in (and a kernel that
// slices its scratch per thread cuts it in). Saturates, so a size that overflows fails its allocation cleanly.
inline size_t round16(size_t n) { return n <= SIZE_MAX - 15 ? (n + 15) & ~size_t{15} : SIZE_MAX; }

using KernelMemoryFn = KernelMemory (*)(const KernelArgs& args);
// `state` holds memory(args).state bytes (null when 0). Returns Ok or the error it logged (naming the operator
// and the numbers at fault), which fails Method::load.
using KernelPrepareFn = Error (*)(const KernelArgs& args, void* state);

// Loaded arguments as KernelArgs: what Method::load hands `prepare`, and what a test or fuzzer that calls kernels
// directly uses to ask a kernel for its memory. `constants` has bit i set when argument i is constant data (only the
// first 64 arguments can be); a direct caller whose tensors all hold their final data keeps the default.
class LoadedKernelArgs final : public KernelArgs {
 public:
  LoadedKernelArgs(EValue** args, size_t n, uint64_t constants = ~uint64_t{0}, bool values_fixed = false)
      : args_(args), n_(n), constants_(constants), values_fixed_(values_fixed) {}
  size_t size() const override { return n_; }
  Tag tag(size_t i) const override { return args_[i]->tag(); }
  ScalarType dtype(size_t i) const override { return args_[i]->as_tensor().scalar_type(); }
  ArrayRef<int32_t> sizes(size_t i) const override { return args_[i]->as_tensor().sizes(); }
  int64_t to_int(size_t i) const override { return args_[i]->as_int(); }
  double to_double(size_t i) const override {
    return args_[i]->is_double() ? args_[i]->as_double() : static_cast<double>(args_[i]->as_int());
  }
  bool to_bool(size_t i) const override { return args_[i]->as_bool(); }
  size_t list_size(size_t i) const override { return args_[i]->as_int_list().size(); }
  int64_t list_item(size_t i, size_t k) const override { return args_[i]->as_int_list()[k]; }
  const Tensor* tensor(size_t i) const override { return args_[i]->is_tensor() ? &args_[i]->as_tensor() : nullptr; }
  bool is_constant(size_t i) const override { return i < 64 && args_[i]->is_tensor() && (constants_ >> i & 1) != 0; }
  bool shapes_fixed() const override {
    if (!values_fixed_) return false;
    for (size_t i = 0; i < n_; ++i) {
      if (args_[i]->is_tensor() && !is_static(args_[i]->as_tensor())) return false;
      if (!args_[i]->is_tensor_list()) continue;
      for (const Tensor& t : args_[i]->as_tensor_list()) {
        if (!is_static(t)) return false;
      }
    }
    return true;
  }

 private:
  static bool is_static(const Tensor& t) { return t.impl()->shape_dynamism() == ShapeDynamism::Static; }

  EValue** args_;
  size_t n_;
  uint64_t constants_;
  bool values_fixed_;  // the method has no instruction that replaces a value
};

}  // namespace ember
