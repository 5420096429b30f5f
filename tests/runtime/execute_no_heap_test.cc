// Proves Method::execute() performs no heap allocation: malloc, calloc and realloc (and so operator new) are
// replaced for the whole process; while armed, each call is counted and returns null. Under AddressSanitizer,
// which owns malloc, the sanitizer's allocation hook counts the calls instead (they then succeed).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_TEST_ASAN 1
#endif

namespace {
volatile bool g_armed = false;
volatile int g_calls = 0;
}  // namespace

#if defined(EMBER_TEST_ASAN)
// The sanitizers' public interface (sanitizer/allocator_interface.h, which gcc does not install).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {
void count_malloc(const volatile void*, size_t) {
  if (g_armed) g_calls = g_calls + 1;
}
void ignore_free(const volatile void*) {}
// Installed before main, so every allocation after it is seen.
const int g_hooks_installed = __sanitizer_install_malloc_and_free_hooks(count_malloc, ignore_free);
}  // namespace
#else
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

extern "C" void* malloc(size_t n) {
  if (g_armed) {
    g_calls = g_calls + 1;
    return nullptr;
  }
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t s) {
  if (g_armed) {
    g_calls = g_calls + 1;
    return nullptr;
  }
  return __libc_calloc(n, s);
}
extern "C" void* realloc(void* p, size_t n) {
  if (g_armed) {
    g_calls = g_calls + 1;
    return nullptr;
  }
  return __libc_realloc(p, n);
}
#endif

namespace ember {
namespace {

std::vector<std::string> g_programs;

TEST(ExecuteNoHeap, ZooProgramsExecuteWithoutAllocating) {
  ASSERT_FALSE(g_programs.empty());
  // The guard itself works: an armed malloc is seen (and, without ASan, refused).
  g_armed = true;
  void* volatile probe = malloc(16);  // volatile: the compiler may not drop an unused allocation
  g_armed = false;
#if defined(EMBER_TEST_ASAN)
  EXPECT_EQ(g_hooks_installed, 1);
  free(probe);
#else
  EXPECT_EQ(probe, nullptr);
#endif
  EXPECT_EQ(g_calls, 1);
  g_calls = 0;

  for (const std::string& path : g_programs) {
    SCOPED_TRACE(path);
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
    ASSERT_TRUE(loader.ok());
    Result<Program> program = Program::load(&loader.get());
    ASSERT_TRUE(program.ok());
    Result<MethodMeta> meta = program->method_meta("forward");
    ASSERT_TRUE(meta.ok());
    std::vector<std::vector<uint8_t>> storage;
    std::vector<Span<uint8_t>> pools;
    for (size_t p = 0; p < meta->num_memory_planned_buffers(); ++p) {
      storage.emplace_back(*meta->memory_planned_buffer_size(p) + 16);
    }
    for (auto& s : storage) pools.emplace_back(s.data(), s.size());
    HierarchicalAllocator planned(Span<Span<uint8_t>>(pools.data(), pools.size()));
    alignas(16) static uint8_t method_buf[1 << 16];
    // The kernels' scratch as MethodMeta plans it (held before the heap check starts, like the pools).
    storage.emplace_back(meta->scratch_bytes() + 16);
    uint8_t* temp_buf =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(storage.back().data()) + 15) & ~uintptr_t{15});
    MemoryAllocator method_alloc(method_buf, sizeof(method_buf));
    MemoryAllocator temp_alloc(temp_buf, meta->scratch_bytes());
    MemoryManager memory{&method_alloc, &planned, &temp_alloc};
    Result<Method> method = program->load_method("forward", &memory);
    ASSERT_TRUE(method.ok());
    for (size_t i = 0; i < method->num_inputs(); ++i) {
      Tensor t = *method->input(i);
      std::vector<uint8_t> zeros(t.nbytes());
      ASSERT_EQ(method->set_input(i, t.scalar_type(), t.sizes(), zeros.data(), zeros.size()), Error::Ok);
    }
    g_armed = true;
    const Error first = method->execute();
    const Error second = method->execute();
    g_armed = false;
    EXPECT_EQ(first, Error::Ok);
    EXPECT_EQ(second, Error::Ok);
    EXPECT_EQ(g_calls, 0) << "heap allocations during execute()";
  }
}

}  // namespace
}  // namespace ember

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) ember::g_programs.emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
