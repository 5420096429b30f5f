// N methods loaded from one Program execute at once on N threads, each with its own memory, and every output is
// byte for byte the output of the same input run serially; the program's constants are read by all of them and
// written by none. Also under ThreadSanitizer (`bazel test --config=tsan`, docs/threads.md).
//
// The programs are the program fuzzer's seeds (tests/fuzz/make_program_seeds.py), passed as arguments: a small CNN
// (convolutions, batch norm, both poolings, a linear head) and a transformer block (attention, layer norm, GELU).
// Each runs twice: mapped read-only from its file (a write to a constant would fault), and from a heap buffer whose
// bytes are compared before and after.
#include <stdint.h>
#include <string.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/threads/posix_thread_pool.h"

namespace ember {
namespace {

std::vector<std::string> g_files;

std::string find_file(const std::string& name) {
  for (const std::string& f : g_files) {
    if (f.size() >= name.size() && f.compare(f.size() - name.size(), name.size(), name) == 0) return f;
  }
  return "";
}

constexpr int kThreads = 4;
constexpr int kRuns = 40;    // inputs, each run once serially
constexpr int kPasses = 20;  // times each thread runs its share of them, so the threads overlap for many runs

// Everything one loaded method runs in, sized from its MethodMeta.
struct MethodMemory {
  std::vector<std::vector<uint64_t>> pools;
  std::vector<Span<uint8_t>> spans;
  std::vector<uint64_t> method_bytes, scratch_bytes;
  std::unique_ptr<HierarchicalAllocator> planned;
  std::unique_ptr<MemoryAllocator> method_allocator, temp_allocator;
  MemoryManager manager;

  MethodMemory(const MethodMeta& meta, int threads) {
    for (size_t p = 0; p < meta.num_memory_planned_buffers(); ++p) {
      const size_t n = meta.memory_planned_buffer_size(p).get();
      pools.emplace_back(n / 8 + 2);
    }
    for (size_t p = 0; p < pools.size(); ++p) {
      spans.emplace_back(reinterpret_cast<uint8_t*>(pools[p].data()), pools[p].size() * 8);
    }
    planned.reset(new HierarchicalAllocator(Span<Span<uint8_t>>(spans.data(), spans.size())));
    method_bytes.resize(meta.method_allocator_bytes() / 8 + 2);
    method_allocator.reset(new MemoryAllocator(method_bytes.data(), method_bytes.size() * 8));
    scratch_bytes.resize(meta.scratch_bytes(threads) / 8 + 2);
    temp_allocator.reset(new MemoryAllocator(scratch_bytes.data(), scratch_bytes.size() * 8));
    manager = MemoryManager{method_allocator.get(), planned.get(), temp_allocator.get(), threads};
  }
};

struct LoadedMethod {
  std::unique_ptr<MethodMemory> memory;
  std::unique_ptr<Method> method;
};

// Method "forward" of `program` in memory of its own; fails the test (returning an empty method) if it does not load.
LoadedMethod load_forward(const Program& program, ThreadPool* pool) {
  LoadedMethod m;
  Result<MethodMeta> meta = program.method_meta("forward");
  EXPECT_TRUE(meta.ok()) << testing::last_log();
  if (!meta.ok()) return m;
  const int threads = pool != nullptr ? pool->threads() : 1;
  m.memory.reset(new MethodMemory(meta.get(), threads));
  Result<Method> method = program.load_method("forward", &m.memory->manager);
  EXPECT_TRUE(method.ok()) << testing::last_log();
  if (!method.ok()) return m;
  m.method.reset(new Method(std::move(method.get())));
  m.method->set_thread_pool(pool);
  return m;
}

// Input `run`'s values: a function of the run, the input and the element, so every run computes something else.
std::vector<float> input_values(size_t n, int run, size_t input) {
  std::vector<float> v(n);
  uint32_t x = 2654435761u * static_cast<uint32_t>(run + 1) + 40503u * static_cast<uint32_t>(input + 1);
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 4.0f - 2.0f;
  }
  return v;
}

// Sets run `run`'s inputs, executes, and returns every output's bytes one after another; empty on any failure.
std::vector<uint8_t> run_once(Method& method, int run) {
  for (size_t i = 0; i < method.num_inputs(); ++i) {
    Result<Tensor> in = method.input(i);
    if (!in.ok() || in->scalar_type() != ScalarType::Float) return {};
    const std::vector<float> v = input_values(static_cast<size_t>(in->numel()), run, i);
    if (method.set_input(i, ScalarType::Float, in->sizes(), v.data(), v.size() * sizeof(float)) != Error::Ok) return {};
  }
  if (method.execute() != Error::Ok) return {};
  std::vector<uint8_t> bytes;
  for (size_t o = 0; o < method.num_outputs(); ++o) {
    Result<Tensor> out = method.output(o);
    if (!out.ok()) return {};
    const uint8_t* p = static_cast<const uint8_t*>(out->const_data_ptr());
    bytes.insert(bytes.end(), p, p + out->nbytes());
  }
  return bytes;
}

// Every run's outputs on one method, in order.
std::vector<std::vector<uint8_t>> run_serially(const Program& program, ThreadPool* pool) {
  LoadedMethod m = load_forward(program, pool);
  std::vector<std::vector<uint8_t>> outputs;
  if (m.method == nullptr) return outputs;
  for (int r = 0; r < kRuns; ++r) outputs.push_back(run_once(*m.method, r));
  return outputs;
}

// kThreads threads, each loading its own method from `program` at once and running every kThreads-th input kPasses
// times, each run's outputs checked against `serial`. Returns the runs whose outputs differed (or failed).
int mismatches_on_threads(const Program& program, ThreadPool* pool, const std::vector<std::vector<uint8_t>>& serial) {
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LoadedMethod m = load_forward(program, pool);
      if (m.method == nullptr) {
        wrong[static_cast<size_t>(t)] = kRuns;
        return;
      }
      for (int pass = 0; pass < kPasses; ++pass) {
        for (int r = t; r < kRuns; r += kThreads) {
          const std::vector<uint8_t> out = run_once(*m.method, r);
          wrong[static_cast<size_t>(t)] += out.empty() || out != serial[static_cast<size_t>(r)];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  int total = 0;
  for (int w : wrong) total += w;
  return total;
}

void check_program(const Program& program, const std::string& what) {
  // Without a pool, and with one pool of 2 threads given to every method (these small programs' kernels mostly stay
  // on the calling thread; posix_thread_pool_test drives one pool from several callers hard).
  for (int pool_threads : {1, 2}) {
    PosixThreadPool* pool = nullptr;
    if (pool_threads > 1) {
      Result<PosixThreadPool*> p = PosixThreadPool::create(pool_threads);
      ASSERT_TRUE(p.ok());
      pool = p.get();
    }
    const std::vector<std::vector<uint8_t>> serial = run_serially(program, pool);
    ASSERT_EQ(serial.size(), static_cast<size_t>(kRuns)) << what;
    for (int r = 0; r < kRuns; ++r) ASSERT_FALSE(serial[static_cast<size_t>(r)].empty()) << what << " run " << r;
    // Different inputs give different outputs, or a method ignoring its input would pass.
    EXPECT_NE(serial[0], serial[1]) << what;
    EXPECT_EQ(mismatches_on_threads(program, pool, serial), 0)
        << what << ": runs on " << kThreads << " threads (pool of " << pool_threads << ") differ from serial";
    PosixThreadPool::destroy(pool);
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

class ConcurrentMethods : public ::testing::TestWithParam<const char*> {};

// Mapped read-only (MmapDataLoader maps PROT_READ): a kernel writing a constant would fault.
TEST_P(ConcurrentMethods, FromAReadOnlyMapping) {
  const std::string path = find_file(GetParam());
  ASSERT_FALSE(path.empty()) << GetParam() << " is not among the test's arguments";
  Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
  ASSERT_TRUE(loader.ok()) << testing::last_log();
  Result<Program> program = Program::load(&loader.get());
  ASSERT_TRUE(program.ok()) << testing::last_log();
  check_program(program.get(), path);
}

// From a heap buffer (BufferDataLoader reads constants in place): its bytes are the same after every run.
TEST_P(ConcurrentMethods, ConstantsUnwrittenInABuffer) {
  const std::string path = find_file(GetParam());
  ASSERT_FALSE(path.empty()) << GetParam() << " is not among the test's arguments";
  const std::vector<uint8_t> file = read_file(path);
  ASSERT_FALSE(file.empty());
  std::vector<uint64_t> storage(file.size() / 8 + 1);  // 8-byte aligned, as the program's scalars need
  memcpy(storage.data(), file.data(), file.size());
  BufferDataLoader loader(storage.data(), file.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << testing::last_log();
  check_program(program.get(), path);
  EXPECT_EQ(memcmp(storage.data(), file.data(), file.size()), 0) << path << ": the program's bytes were written";
}

INSTANTIATE_TEST_SUITE_P(Seeds, ConcurrentMethods, ::testing::Values("tiny_cnn.pte", "tiny_transformer.pte"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           return name.substr(0, name.find('.'));
                         });

}  // namespace
}  // namespace ember

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) ember::g_files.push_back(argv[i]);
  return RUN_ALL_TESTS();
}
