// llm_runner's command line: its flags, and their checks before anything loads.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace ember {
namespace llm {

struct RunnerOptions {
  const char* model = nullptr;
  const char* tokenizer = nullptr;
  const char* prompt = nullptr;
  const char* prompt_ids = nullptr;
  long max_new_tokens = 128;
  float temperature = 0.0f;
  uint64_t seed = 0;
  bool ids = false;
  bool ignore_eos = false;
  bool bos = true;
  long threads = 1;
  long speculate = 0;  // drafted tokens per step at most; 0: one token per step
  const char* grammar = nullptr;
  const char* json_schema = nullptr;
  std::vector<std::string> data_files;  // --data, in order
  bool chat = false;
  const char* chat_template = nullptr;
  const char* system = nullptr;
  bool context_slide = false;
};

// Prints the usage to stderr; returns the bad-usage exit code (2).
int usage(const char* argv0);

// Reads argv into `o` and --prompt-ids into `prompt`, checking the flags' values and combinations. Returns 0, or
// the exit code (2, after saying what was wrong) to end with.
int parse_options(int argc, char** argv, RunnerOptions* o, std::vector<int64_t>* prompt);

}  // namespace llm
}  // namespace ember
