// llm_runner's statistics on stderr, one line each (tests/llm and bench/llm.py parse them: keep their format).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "examples/llm/decoder_program.h"
#include "examples/llm/grammar/constraint.h"

namespace ember {
namespace llm {

struct RunStats {
  long threads = 1;
  uint64_t load_ns = 0;
  size_t n_prompt = 0;
  size_t n_generated = 0;  // at least 1 (the first token comes from prefill)
  bool stopped_at_eos = false;
  bool grammar_ended = false;
  uint64_t ttft_ns = 0;
  uint64_t prefill_ns = 0;
  uint64_t decode_ns = 0;
  size_t n_masks = 0;  // grammar masks computed, and their time
  uint64_t mask_ns = 0;
  bool speculate = false;  // --speculate: the steps and drafts below
  size_t steps = 0;
  size_t drafting_steps = 0;
  size_t drafted = 0;
  size_t accepted = 0;
};

// The model, prompt, generation, timing, grammar, speculation, memory and sessions lines.
void print_stats(const RunStats& stats, const DecoderProgram& program, size_t n_eos,
                 const GrammarConstraint* constraint);

}  // namespace llm
}  // namespace ember
