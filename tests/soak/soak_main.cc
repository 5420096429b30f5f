// The soak driver: long runs of the runtime watched for growth (tests/soak/README.md).
//
//   soak [--zoo PROGRAM.pte] [--runs N] [--cycles N] [--llm DECODER.pte] [--decode-steps N] [--seed S]
//        [--json FILE]
//
// --runs: executions of PROGRAM's first method, loaded once (zoo_soak.h run_soak).
// --cycles: load, run, destroy cycles of PROGRAM (cycle_soak).
// --decode-steps: decode steps of a chat on DECODER (llm_soak.h).
// Each part samples resident memory, descriptors and heap bytes about kSamples times and holds every sample after
// its warm-up (the first tenth) to the tolerances of resource_samples.h; --json appends each part's summary as
// one JSON line. Exit 0 when every part ran to the end within them, 1 otherwise, 2 on bad arguments.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "tests/soak/llm_soak.h"
#include "tests/soak/resource_samples.h"
#include "tests/soak/zoo_soak.h"

namespace {

using ember::soak::SampleSeries;

constexpr uint64_t kSamples = 200;

struct Args {
  const char* zoo = nullptr;
  const char* llm = nullptr;
  uint64_t runs = 0, cycles = 0, decode_steps = 0, seed = 37;
  const char* json = nullptr;
};

bool parse(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    char* end = nullptr;
    const uint64_t number = strtoull(value, &end, 10);
    const bool numeric = end != value && *end == '\0';
    if (strcmp(flag, "--zoo") == 0) {
      args->zoo = value;
    } else if (strcmp(flag, "--llm") == 0) {
      args->llm = value;
    } else if (strcmp(flag, "--json") == 0) {
      args->json = value;
    } else if (numeric && strcmp(flag, "--runs") == 0) {
      args->runs = number;
    } else if (numeric && strcmp(flag, "--cycles") == 0) {
      args->cycles = number;
    } else if (numeric && strcmp(flag, "--decode-steps") == 0) {
      args->decode_steps = number;
    } else if (numeric && strcmp(flag, "--seed") == 0) {
      args->seed = number;
    } else {
      return false;
    }
  }
  return (args->zoo != nullptr || (args->runs == 0 && args->cycles == 0)) &&
         (args->llm != nullptr || args->decode_steps == 0);
}

uint64_t sample_every(uint64_t steps) { return steps / kSamples > 0 ? steps / kSamples : 1; }

// Prints the part's verdict and appends its summary to --json.
bool report(const SampleSeries& series, bool good, const Args& args) {
  series.write_json(stdout);
  if (!good) fprintf(stderr, "soak: %s\n", series.error().empty() ? "failed (above)" : series.error().c_str());
  if (args.json != nullptr) {
    FILE* out = fopen(args.json, "a");
    if (out == nullptr) {
      fprintf(stderr, "soak: cannot append to %s\n", args.json);
      return false;
    }
    series.write_json(out);
    fclose(out);
  }
  return good;
}

template <typename Options, typename Soak>
bool part(const char* name, const char* path, uint64_t steps, const Args& args, Soak soak) {
  if (steps == 0) return true;
  Options options;
  options.path = path;
  options.steps = steps;
  options.sample_every = sample_every(steps);
  options.seed = args.seed;
  SampleSeries series(name, steps / 10, kSamples + 2);
  const bool good = soak(options, &series);
  return report(series, good, args);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, &args)) {
    fprintf(stderr,
            "usage: soak [--zoo PROGRAM.pte] [--runs N] [--cycles N] [--llm DECODER.pte] [--decode-steps N] "
            "[--seed S] [--json FILE]\n");
    return 2;
  }
  using ember::soak::LlmOptions;
  using ember::soak::ZooOptions;
  bool good = part<ZooOptions>("zoo runs", args.zoo, args.runs, args, ember::soak::run_soak);
  good = part<ZooOptions>("zoo load cycles", args.zoo, args.cycles, args, ember::soak::cycle_soak) && good;
  good = part<LlmOptions>("llm decode steps", args.llm, args.decode_steps, args, ember::soak::llm_soak) && good;
  return good ? 0 : 1;
}
