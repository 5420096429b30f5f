// Fuzz target: every registered kernel's argument checking. The input picks a kernel from the registry (the
// one a runtime for arbitrary programs links: portable, optimized, quantized and prim kernels) and builds its
// arguments from the kernel's signature letters, as Method::load would after its own checks: each argument has
// the tag the signature asks for, and the first tensor argument has a dtype this build compiled. Everything else
// (shapes, ranks, dim orders, dtypes of the other tensors, ints, doubles, strings, list lengths, the output's
// shape and whether it may be resized) comes from the input, and the kernel must either compute or fail with a
// named error on its context. Every tensor's data is a heap block of exactly its bytes, so AddressSanitizer
// catches a read or write past any of them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>

#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/kernel/operator_registry.h"
#include "tests/fuzz/fuzz_input.h"

namespace ember {
namespace {

constexpr int kMaxArgs = 32;
constexpr int64_t kMaxNumel = 4096;  // per tensor: keeps every call fast, so the fuzzer explores breadth
constexpr size_t kMaxListLength = 6;
constexpr int64_t kMaxIndexBroadcast = 256;  // an optional-tensor list's broadcast shape (index_put_'s writes)

// Every dtype a .pte may give a tensor (Method::load refuses the ones without storage: the complex types).
constexpr ScalarType kStorageTypes[] = {
    ScalarType::Byte,   ScalarType::Char,     ScalarType::Short,  ScalarType::Int,    ScalarType::Long,
    ScalarType::Half,   ScalarType::Float,    ScalarType::Double, ScalarType::Bool,   ScalarType::BFloat16,
    ScalarType::UInt16, ScalarType::UInt32,   ScalarType::UInt64, ScalarType::QInt8,  ScalarType::QUInt8,
    ScalarType::QInt32, ScalarType::QUInt4x2, ScalarType::Bits8,  ScalarType::Bits16, ScalarType::Float8_e4m3fn,
};
constexpr size_t kNumStorageTypes = sizeof(kStorageTypes) / sizeof(kStorageTypes[0]);

// Elements of the broadcast of the list's tensors' shapes (a size of 0 counting as 1, as checked_numel counts),
// or 0 when they do not broadcast.
int64_t broadcast_numel(const Tensor* const* items, size_t n) {
  int32_t shape[kMaxTensorDim];
  int32_t rank = 0;
  for (size_t i = 0; i < n; ++i) {
    if (items[i] == nullptr) continue;
    const Tensor& t = *items[i];
    const int32_t r = t.dim() > rank ? t.dim() : rank;
    int32_t next[kMaxTensorDim];
    for (int32_t d = 0; d < r; ++d) {
      const int32_t a = d - (r - rank) >= 0 ? shape[d - (r - rank)] : 1;
      const int32_t b = d - (r - t.dim()) >= 0 ? t.size(d - (r - t.dim())) : 1;
      if (a != b && a != 1 && b != 1) return 0;
      next[d] = a == 1 ? b : a;
    }
    rank = r;
    memcpy(shape, next, sizeof(int32_t) * static_cast<size_t>(r));
  }
  int64_t numel = 1;
  // Stops once past any bound a caller uses, so 16 dims of 47 cannot overflow.
  for (int32_t d = 0; d < rank && numel <= kMaxNumel; ++d) numel *= shape[d] != 0 ? shape[d] : 1;
  return numel;
}

// Owns every block one call's arguments use; freed after the call.
class Arena {
 public:
  ~Arena() {
    for (size_t i = 0; i < count_; ++i) free(blocks_[i]);
  }
  // Exactly `size` bytes (malloc(0) still gives a distinct pointer), or null when the arena is full.
  void* take(size_t size) {
    if (count_ == kMaxBlocks) return nullptr;
    void* p = malloc(size == 0 ? 1 : size);
    blocks_[count_++] = p;
    return p;
  }
  template <typename T>
  T* array(size_t n) {
    T* p = static_cast<T*>(take(n * sizeof(T)));
    if (p != nullptr) {
      for (size_t i = 0; i < n; ++i) new (&p[i]) T();
    }
    return p;
  }

 private:
  static constexpr size_t kMaxBlocks = 1024;
  void* blocks_[kMaxBlocks];
  size_t count_ = 0;
};

// 16-bit FNV-1a of a kernel's name: the input names a kernel by this hash, so a saved input keeps calling the
// same kernel when others are added to the registry.
uint16_t name_hash(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) h = (h ^ static_cast<uint8_t>(*s)) * 16777619u;
  return static_cast<uint16_t>(h ^ (h >> 16));
}

// The kernel whose hash is the first at or after `key` (wrapping around).
const KernelEntry* pick_kernel(uint16_t key) {
  Span<const KernelEntry> table = registered_kernels();
  const KernelEntry* best = nullptr;
  const KernelEntry* lowest = nullptr;
  uint16_t best_hash = 0, lowest_hash = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const uint16_t h = name_hash(table[i].name);
    if (h >= key && (best == nullptr || h < best_hash)) best = &table[i], best_hash = h;
    if (lowest == nullptr || h < lowest_hash) lowest = &table[i], lowest_hash = h;
  }
  return best != nullptr ? best : lowest;
}

void store(ScalarType type, void* data, int64_t i, double v) {
  switch (type) {
    case ScalarType::Float: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case ScalarType::Double: static_cast<double*>(data)[i] = v; break;
    case ScalarType::Half: static_cast<Half*>(data)[i] = Half(static_cast<float>(v)); break;
    case ScalarType::BFloat16: static_cast<BFloat16*>(data)[i] = BFloat16(static_cast<float>(v)); break;
    case ScalarType::Long: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); break;
    case ScalarType::Int: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
    case ScalarType::Short: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); break;
    case ScalarType::Bool: static_cast<bool*>(data)[i] = v != 0; break;
    default: {
      // Unsigned and the types kernels do not compute: the low bytes of a small non-negative integer.
      const uint64_t u = static_cast<uint64_t>(v < 0 ? -v : v);
      memcpy(static_cast<uint8_t*>(data) + i * static_cast<int64_t>(element_size(type)), &u,
             element_size(type) < sizeof(u) ? element_size(type) : sizeof(u));
    }
  }
}

struct Builder {
  Builder(fuzz::FuzzInput& input, Arena& blocks, const KernelEntry& entry) : in(input), arena(blocks), kernel(entry) {}

  fuzz::FuzzInput& in;
  Arena& arena;
  const KernelEntry& kernel;
  ScalarType first_type = ScalarType::Float;
  bool have_first = false;
  int32_t last_sizes[kMaxTensorDim] = {};
  int32_t last_dim = -1;

  ScalarType pick_type() {
    const uint8_t b = in.u8();
    if (!have_first) {
      // The first tensor's dtype must be one the build compiled (Method::load checks it): the n-th set bit.
      const uint32_t mask = kernel.dtype_mask;
      const int bits = __builtin_popcount(mask);
      if (bits == 0) return kStorageTypes[b % kNumStorageTypes];
      int want = b % bits;
      for (int t = 0; t < 32; ++t) {
        if ((mask >> t & 1u) && want-- == 0) return static_cast<ScalarType>(t);
      }
    }
    if (b < 192) return first_type;  // mostly the same as the first tensor, or nothing but dtype errors is found
    return kStorageTypes[b % kNumStorageTypes];
  }

  int32_t pick_shape(int32_t* sizes) {
    const uint8_t mode = in.u8();
    int32_t dim;
    if (mode < 96 && last_dim >= 0) {
      // The previous tensor's shape, sometimes with one dimension set to 1 (a broadcast) or changed.
      dim = last_dim;
      memcpy(sizes, last_sizes, sizeof(int32_t) * static_cast<size_t>(dim));
      if (dim > 0 && (mode & 3) != 0) {
        const int32_t d = static_cast<int32_t>(in.below(static_cast<uint32_t>(dim)));
        sizes[d] = (mode & 3) == 1 ? 1 : static_cast<int32_t>(in.u8() % 8);
      }
    } else {
      dim = mode < 250 ? static_cast<int32_t>(in.u8() % 5) : static_cast<int32_t>(in.u8() % (kMaxTensorDim + 1));
      for (int32_t d = 0; d < dim; ++d) {
        const uint8_t s = in.u8();
        sizes[d] = s < 240 ? s % 6 : s % 48;
      }
    }
    // Elements counted as Method::load counts them (runtime/core/tensor.cc checked_numel: a size of 0 counts as 1,
    // since kernels walk an empty tensor's slices), kept to kMaxNumel where the runtime allows 2^31 - 1.
    auto claimed = [&]() {
      int64_t n = 1;
      for (int32_t d = 0; d < dim; ++d) n *= sizes[d] != 0 ? sizes[d] : 1;
      return n;
    };
    if (claimed() > kMaxNumel) {
      // Sizes of at most 2, then dims of 1 from the last until it fits: 2^16 elements at rank 16 were still too
      // many (an index_put_ broadcasting 65,536 indices over 65,536-element slices ran past libFuzzer's time limit).
      for (int32_t d = 0; d < dim; ++d) sizes[d] = sizes[d] > 2 ? 2 : sizes[d];
      for (int32_t d = dim - 1; d >= 0 && claimed() > kMaxNumel; --d) {
        if (sizes[d] == 2) sizes[d] = 1;
      }
    }
    last_dim = dim;
    memcpy(last_sizes, sizes, sizeof(int32_t) * static_cast<size_t>(dim));
    return dim;
  }

  // A tensor as Method::load would describe it: sizes, a dim order (usually contiguous, sometimes another
  // permutation), a data block of exactly its capacity, and for a bounded-dynamic tensor room to grow.
  bool tensor(Tensor* out) {
    const ScalarType type = pick_type();
    if (!have_first) first_type = type, have_first = true;
    int32_t* sizes = arena.array<int32_t>(kMaxTensorDim);
    uint8_t* order = arena.array<uint8_t>(kMaxTensorDim);
    int32_t* strides = arena.array<int32_t>(kMaxTensorDim);
    TensorImpl* impl = static_cast<TensorImpl*>(arena.take(sizeof(TensorImpl)));
    if (!sizes || !order || !strides || !impl) return false;
    const int32_t dim = pick_shape(sizes);
    for (int32_t d = 0; d < dim; ++d) order[d] = static_cast<uint8_t>(d);
    const uint8_t layout = in.u8();
    if (dim > 1 && layout >= 224) {
      for (int32_t d = dim - 1; d > 0; --d) {  // a permutation drawn from the input
        const uint32_t j = in.below(static_cast<uint32_t>(d + 1));
        const uint8_t t = order[d];
        order[d] = order[j];
        order[j] = t;
      }
    }
    const ShapeDynamism dynamism = (layout & 7) == 1 ? ShapeDynamism::DynamicBound : ShapeDynamism::Static;
    Result<TensorImpl> made = TensorImpl::make(type, dim, sizes, order, strides, nullptr, dynamism);
    if (!made.ok()) return false;
    new (impl) TensorImpl(made.get());
    size_t capacity = impl->nbytes();
    if (dynamism == ShapeDynamism::DynamicBound) capacity += element_size(type) * (in.u8() % 16);
    void* data = arena.take(capacity);
    if (data == nullptr) return false;
    impl->set_data(data);
    impl->set_capacity(capacity);
    fill(type, data, static_cast<int64_t>(capacity / element_size(type)));
    *out = Tensor(impl);
    return true;
  }

  void fill(ScalarType type, void* data, int64_t n) {
    const uint8_t mode = in.u8() % 4;
    if (mode == 0) {
      // Any bytes, Bool too: kernels read Bool elements as Bool8 (runtime/core/bool8.h), so a byte of 236 is
      // true, never a C++ bool load the sanitizer would call undefined.
      in.fill(data, static_cast<size_t>(n) * element_size(type));
      return;
    }
    // Small integers (valid indices, dims, zero points) cycling from a seed, or the float edge values.
    const uint8_t seed = in.u8();
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>((seed + i * 7) % 5) - 1;  // -1..3
      if (mode == 2 && is_floating(type)) {
        static constexpr double kSpecial[] = {0.0,     -0.0,  1.0, __builtin_inf(), -__builtin_inf(), __builtin_nan(""),
                                              65504.0, 1e-40, -3.5};
        v = kSpecial[(seed + i) % (sizeof(kSpecial) / sizeof(kSpecial[0]))];
      } else if (mode == 3) {
        v = 0;
      }
      store(type, data, i, v);
    }
  }

  bool int_list(EValue* out) {
    const size_t n = in.u8() % (kMaxListLength + 1);
    EValue* items = arena.array<EValue>(n);
    EValue** boxed = arena.array<EValue*>(n);
    int64_t* unboxed = arena.array<int64_t>(n);
    if (!items || !boxed || !unboxed) return false;
    for (size_t i = 0; i < n; ++i) {
      items[i] = EValue(fuzz::edgy_int(in));
      boxed[i] = &items[i];
    }
    *out = EValue(BoxedIntList{boxed, unboxed, n});
    return true;
  }

  Scalar scalar() {
    switch (in.u8() % 3) {
      case 0: return Scalar(fuzz::edgy_int(in));
      case 1: return Scalar(fuzz::edgy_double(in));
      default: return Scalar(in.flag());
    }
  }

  // One argument for signature letter `code` (KernelEntry::arg_types).
  bool arg(char code, EValue* out) {
    // Optional letters: None a quarter of the time.
    const bool optional =
        code == 't' || code == 'r' || code == 'n' || code == 'f' || code == 'c' || code == 'J' || code == 'z';
    if (optional && in.u8() < 64) {
      *out = EValue();
      return true;
    }
    switch (code) {
      case 'T':
      case 't': {
        Tensor t;
        if (!tensor(&t)) return false;
        *out = EValue(t);
        return true;
      }
      case 's':
      case 'r': {
        const Scalar s = scalar();
        *out = s.is_integral()   ? EValue(s.to<int64_t>())
               : s.is_floating() ? EValue(s.to_double())
                                 : EValue(s.to<bool>());
        return true;
      }
      case 'i':
      case 'n': *out = EValue(fuzz::edgy_int(in)); return true;
      case 'd':
      case 'f': *out = EValue(fuzz::edgy_double(in)); return true;
      case 'b':
      case 'c': *out = EValue(in.flag()); return true;
      case 'I':
      case 'J': return int_list(out);
      case 'D': {
        const size_t n = in.u8() % (kMaxListLength + 1);
        double* items = arena.array<double>(n);
        if (!items) return false;
        for (size_t i = 0; i < n; ++i) items[i] = fuzz::edgy_double(in);
        *out = EValue(ArrayRef<double>(items, n));
        return true;
      }
      case 'B': {
        const size_t n = in.u8() % (kMaxListLength + 1);
        bool* items = arena.array<bool>(n);
        if (!items) return false;
        for (size_t i = 0; i < n; ++i) items[i] = in.flag();
        *out = EValue(ArrayRef<bool>(items, n));
        return true;
      }
      case 'L':
      case 'P': {
        const size_t n = in.u8() % (kMaxListLength + 1);
        if (code == 'L') {
          Tensor* items = arena.array<Tensor>(n);
          if (!items) return false;
          for (size_t i = 0; i < n; ++i) {
            if (!tensor(&items[i])) return false;
          }
          *out = EValue(TensorList(items, n));
        } else {
          const Tensor** items = arena.array<const Tensor*>(n);
          Tensor* storage = arena.array<Tensor>(n);
          if (!items || !storage) return false;
          for (size_t i = 0; i < n; ++i) {
            if (in.u8() < 64) continue;  // None
            if (!tensor(&storage[i])) return false;
            items[i] = &storage[i];
          }
          *out = EValue(OptionalTensorList(items, n));
          // Index tensors broadcast together, and index_put_ writes their broadcast shape's elements times self's
          // other dims' (values broadcast; no tensor holds the product). Two 4096-element indices crossed over a
          // 4096-element slice are 2^24 writes: 7.8 s under ASan here, 16 s on a loaded machine, against
          // libFuzzer's 25. Held to 256, so at most 2^20 (a list whose shapes do not broadcast is kept: kernels
          // refuse it by name).
          if (broadcast_numel(items, n) > kMaxIndexBroadcast) return false;
        }
        return true;
      }
      case 'S':
      case 'z': {
        static constexpr const char* kWords[] = {"none", "tanh", "", "mean", "sum", "trunc", "floor"};
        const uint8_t b = in.u8();
        if (b < 200) {
          const char* w = kWords[b % (sizeof(kWords) / sizeof(kWords[0]))];
          *out = EValue(StringView{w, strlen(w)});
          return true;
        }
        const size_t n = in.u8() % 9;
        char* s = static_cast<char*>(arena.take(n + 1));
        if (!s) return false;
        in.fill(s, n);
        s[n] = '\0';  // strings from a .pte are NUL-terminated flatbuffer strings
        *out = EValue(StringView{s, strlen(s)});
        return true;
      }
      case 'x': *out = EValue(); return true;
    }
    return false;
  }
};

}  // namespace
}  // namespace ember

// EMBER_KERNEL_FUZZ_SEEDS=DIR: writes three seeds per registered kernel into DIR (its hash, then a body of
// zeros, ones or twos: scalar tensors, 1-element ones, 2-d ones), and exits. tools/fuzz.sh seeds runs it.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = getenv("EMBER_KERNEL_FUZZ_SEEDS");
  if (dir == nullptr) return 0;
  ember::Span<const ember::KernelEntry> table = ember::registered_kernels();
  for (size_t i = 0; i < table.size(); ++i) {
    const uint16_t key = ember::name_hash(table[i].name);
    for (uint8_t fill = 0; fill < 3; ++fill) {
      uint8_t seed[64];
      memset(seed, fill, sizeof(seed));
      seed[0] = static_cast<uint8_t>(key & 0xff);
      seed[1] = static_cast<uint8_t>(key >> 8);
      char path[512];
      snprintf(path, sizeof(path), "%s/%s-%u", dir, table[i].name, static_cast<unsigned>(fill));
      for (char* c = path + strlen(dir) + 1; *c; ++c) {
        if (*c == ':') *c = '_';
      }
      FILE* f = fopen(path, "wb");
      if (f == nullptr || fwrite(seed, 1, sizeof(seed), f) != sizeof(seed) || fclose(f) != 0) {
        fprintf(stderr, "kernel_fuzz: cannot write %s\n", path);
        exit(1);
      }
    }
  }
  fprintf(stderr, "kernel_fuzz: wrote %zu seeds to %s\n", table.size() * 3, dir);
  exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::FuzzInput in(data, size);
  const KernelEntry* kernel = pick_kernel(in.u16());
  if (kernel == nullptr) return 0;
  const size_t nargs = strlen(kernel->arg_types);
  if (nargs > static_cast<size_t>(kMaxArgs)) abort();  // a signature this target was not written for

  Arena arena;
  Builder b(in, arena, *kernel);
  EValue values[kMaxArgs];
  EValue* args[kMaxArgs];
  for (size_t k = 0; k < nargs; ++k) {
    args[k] = &values[k];
    const char code = kernel->arg_types[k];
    const bool is_return = k + 1 == nargs;
    // The return value of an out-variant is the out argument itself in a program (the same value index), and a
    // list of the outs for a kernel with several; the other kernels (prim ops) write their result into it.
    if (is_return && code == 'T' && k > 0 && values[k - 1].is_tensor()) {
      args[k] = &values[k - 1];
      continue;
    }
    if (is_return && code == 'L') {
      size_t first = k;
      while (first > 0 && values[first - 1].is_tensor() && kernel->arg_types[first - 1] == 'T') --first;
      Tensor* outs = arena.array<Tensor>(k - first);
      if (outs == nullptr) return 0;
      for (size_t j = first; j < k; ++j) outs[j - first] = values[j].as_tensor();
      values[k] = EValue(TensorList(outs, k - first));
      continue;
    }
    if (!b.arg(code, &values[k])) return 0;
  }

  // As Method::load does: the kernel's memory and prepare step first (kernel_args.h). Scratch is usually what the
  // kernel asked for; sometimes none or a little, which kernels must survive (falling back, or failing by name).
  const LoadedKernelArgs loaded(args, nargs);
  const KernelMemory need = kernel->memory != nullptr ? kernel->memory(loaded) : KernelMemory{};
  if (need.state > (1u << 24) || need.scratch > (1u << 26)) return 0;  // a real plan this big is refused at load
  void* state = need.state ? calloc(1, need.state) : nullptr;
  if (kernel->prepare != nullptr && kernel->prepare(loaded, state) != Error::Ok) {
    free(state);
    return 0;
  }
  const uint8_t scratch_choice = in.u8() % 4;
  const size_t scratch_size = scratch_choice == 0   ? 0
                              : scratch_choice == 1 ? (need.scratch < 64 ? need.scratch : 64)
                                                    : need.scratch;
  void* scratch = scratch_size ? aligned_alloc(16, (scratch_size + 15) & ~size_t{15}) : nullptr;
  KernelContext ctx(state, Span<uint8_t>(static_cast<uint8_t*>(scratch), scratch_size));
  kernel->fn(ctx, args);
  free(scratch);
  free(state);
  return 0;
}
