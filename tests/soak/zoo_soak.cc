#include "tests/soak/zoo_soak.h"

#include <ember/ember.h>
#include <stdio.h>
#include <string.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/soak/seeded_random.h"

namespace ember {
namespace soak {
namespace {

bool ok(ember_status status, const char* what, const char* path) {
  if (status == EMBER_OK) return true;
  fprintf(stderr, "soak: %s: %s: %s (%s)\n", path, what, ember_status_name(status), ember_last_error());
  return false;
}

// One input set: a tensor per input, its bytes drawn from the seed.
struct InputSet {
  std::vector<ember_tensor> tensors;
  std::vector<std::vector<uint8_t>> bytes;
};

// Values a model of the zoo accepts for the dtype; false for one the soak does not generate.
bool fill(int32_t dtype, std::vector<uint8_t>* bytes, SeededRandom* random) {
  const size_t n = bytes->size();
  switch (dtype) {
    case EMBER_DTYPE_FLOAT32:
      for (size_t i = 0; i + 4 <= n; i += 4) {
        const float v = random->unit();
        memcpy(bytes->data() + i, &v, 4);
      }
      return true;
    case EMBER_DTYPE_INT64:
      for (size_t i = 0; i + 8 <= n; i += 8) {
        const int64_t v = static_cast<int64_t>(random->below(4));
        memcpy(bytes->data() + i, &v, 8);
      }
      return true;
    case EMBER_DTYPE_BOOL:
    case EMBER_DTYPE_UINT8:
    case EMBER_DTYPE_INT8:
      for (size_t i = 0; i < n; ++i) (*bytes)[i] = static_cast<uint8_t>(random->below(2));
      return true;
    default: return false;
  }
}

// The first method's name and `count` input sets for it, drawn from `seed`.
bool make_inputs(ember_program* program, const char* path, uint64_t seed, int count, const char** method,
                 std::vector<InputSet>* sets) {
  if (!ok(ember_program_method_name(program, 0, method), "method name", path)) return false;
  ember_method_info info;
  info.size = sizeof(info);
  if (!ok(ember_method_get_info(program, *method, &info), "method info", path)) return false;
  SeededRandom random(seed);
  sets->resize(static_cast<size_t>(count));
  for (InputSet& set : *sets) {
    for (size_t i = 0; i < info.num_inputs; ++i) {
      ember_tensor_info t;
      t.size = sizeof(t);
      if (!ok(ember_method_input_info(program, *method, i, &t), "input info", path)) return false;
      set.bytes.emplace_back(t.nbytes);
      if (t.kind != EMBER_VALUE_TENSOR || !fill(t.dtype, &set.bytes.back(), &random)) {
        fprintf(stderr, "soak: %s: input %zu of %s: kind %d dtype %d is not one the soak generates\n", path, i, *method,
                t.kind, t.dtype);
        return false;
      }
      ember_tensor value;
      ember_tensor_init(&value);
      value.dtype = t.dtype;
      value.rank = t.rank;
      memcpy(value.shape, t.shape, sizeof(value.shape));
      value.nbytes = t.nbytes;
      set.tensors.push_back(value);
    }
    for (size_t i = 0; i < set.tensors.size(); ++i) set.tensors[i].data = set.bytes[i].data();
  }
  return true;
}

// Each input set's outputs from its first run; later runs must match them bit for bit.
class References {
 public:
  explicit References(size_t sets) : outputs_(sets) {}
  bool check(ember_method* method, size_t set, uint64_t step, const char* path) {
    size_t num_outputs = 0;
    if (!ok(ember_method_num_outputs(method, &num_outputs), "num outputs", path)) return false;
    std::vector<std::vector<uint8_t>>& expected = outputs_[set];
    const bool first = expected.empty();
    for (size_t o = 0; o < num_outputs; ++o) {
      ember_tensor out;
      ember_tensor_init(&out);
      if (!ok(ember_method_output(method, o, &out), "output", path)) return false;
      const uint8_t* bytes = static_cast<const uint8_t*>(out.data);
      if (first) {
        expected.emplace_back(bytes, bytes + out.nbytes);
        continue;
      }
      if (out.nbytes != expected[o].size() || memcmp(bytes, expected[o].data(), out.nbytes) != 0) {
        size_t at = 0;
        while (at < out.nbytes && at < expected[o].size() && bytes[at] == expected[o][at]) ++at;
        fprintf(stderr,
                "soak: %s: step %llu, input set %zu: output %zu differs from that set's first run at byte %zu "
                "(%zu bytes now, %zu then)\n",
                path, (unsigned long long)step, set, o, at, out.nbytes, expected[o].size());
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<std::vector<std::vector<uint8_t>>> outputs_;
};

bool set_inputs(ember_method* method, const InputSet& set, const char* path) {
  for (size_t i = 0; i < set.tensors.size(); ++i) {
    if (!ok(ember_method_set_input(method, i, &set.tensors[i]), "set input", path)) return false;
  }
  return true;
}

bool execute_checked(ember_method* method, const InputSet& set, size_t set_index, uint64_t step, References* references,
                     const char* path) {
  return set_inputs(method, set, path) && ok(ember_method_execute(method), "execute", path) &&
         references->check(method, set_index, step, path);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The inputs and method name, from a program loaded just for that (and destroyed).
bool prepare(const ZooOptions& options, std::string* method, std::vector<InputSet>* sets) {
  ember_program* program = nullptr;
  if (!ok(ember_program_load_mapped(options.path, nullptr, &program), "load", options.path)) return false;
  const char* name = nullptr;
  const bool made = make_inputs(program, options.path, options.seed, options.input_sets, &name, sets);
  // The name lives in the program: a copy outlives it.
  if (made) *method = name;
  ember_program_destroy(program);
  return made;
}

}  // namespace

bool run_soak(const ZooOptions& options, SampleSeries* series) {
  std::string method_name;
  std::vector<InputSet> sets;
  if (!prepare(options, &method_name, &sets)) return false;
  References references(sets.size());
  ember_program* program = nullptr;
  ember_method* method = nullptr;
  bool good = ok(ember_program_load_mapped(options.path, nullptr, &program), "load", options.path) &&
              ok(ember_method_load(program, method_name.c_str(), nullptr, &method), "method load", options.path);
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t step = 0; good && step < options.steps; ++step) {
    const size_t set = static_cast<size_t>(step % sets.size());
    good = execute_checked(method, sets[set], set, step, &references, options.path);
    if (good && (step + 1) % options.sample_every == 0) good = series->take(step + 1);
  }
  const double seconds = seconds_since(start);
  ember_method_destroy(method);
  ember_program_destroy(program);
  return series->finish(options.steps, seconds) && good;
}

bool cycle_soak(const ZooOptions& options, SampleSeries* series) {
  std::string method_name;
  std::vector<InputSet> sets;
  if (!prepare(options, &method_name, &sets)) return false;
  References references(sets.size());
  bool good = true;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t step = 0; good && step < options.steps; ++step) {
    ember_program* program = nullptr;
    ember_method* method = nullptr;
    // Both loaders: a mapping and a descriptor (mapped), or a heap copy of the file (read).
    const ember_status loaded = step % 2 == 0 ? ember_program_load_mapped(options.path, nullptr, &program)
                                              : ember_program_load_file(options.path, nullptr, &program);
    const size_t set = static_cast<size_t>(step % sets.size());
    good = ok(loaded, "load", options.path) &&
           ok(ember_method_load(program, method_name.c_str(), nullptr, &method), "method load", options.path) &&
           execute_checked(method, sets[set], set, step, &references, options.path);
    ember_method_destroy(method);
    ember_program_destroy(program);
    if (good && (step + 1) % options.sample_every == 0) good = series->take(step + 1);
  }
  return series->finish(options.steps, seconds_since(start)) && good;
}

}  // namespace soak
}  // namespace ember
