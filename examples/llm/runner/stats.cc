#include "examples/llm/runner/stats.h"

#include <stdio.h>
#include <sys/resource.h>

namespace ember {
namespace llm {
namespace {

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }
double per_second(size_t n, uint64_t ns) {
  return ns == 0 ? 0.0 : static_cast<double>(n) * 1e9 / static_cast<double>(ns);
}

}  // namespace

void print_stats(const RunStats& s, const DecoderProgram& program, size_t n_eos, const GrammarConstraint* constraint) {
  const DecoderMetadata& md = program.metadata();
  const size_t n_decoded = s.n_generated - 1;  // tokens after the first: those the decode calls produced
  const DecoderMemory& mem = program.memory();
  size_t pools = 0;
  for (size_t b : mem.pool_bytes) pools += b;
  struct rusage usage_now;
  const long peak_rss_kib = getrusage(RUSAGE_SELF, &usage_now) == 0 ? usage_now.ru_maxrss : -1;
  fprintf(stderr,
          "llm_runner: model: %lld layers, vocab %lld, max_seq_len %lld, %zu EOS ids; load %.1f ms; "
          "%ld thread%s\n",
          static_cast<long long>(md.n_layers), static_cast<long long>(md.vocab_size),
          static_cast<long long>(md.max_seq_len), n_eos, ms(s.load_ns), s.threads, s.threads == 1 ? "" : "s");
  fprintf(stderr, "llm_runner: prompt tokens: %zu\n", s.n_prompt);
  fprintf(stderr, "llm_runner: generated tokens: %zu (%s)\n", s.n_generated,
          s.stopped_at_eos  ? "stopped at EOS"
          : s.grammar_ended ? "the grammar is complete"
                            : "reached --max-new-tokens");
  fprintf(stderr, "llm_runner: time to first token: %.3f ms\n", ms(s.ttft_ns));
  fprintf(stderr, "llm_runner: prefill: %zu tokens in %.3f ms, %.1f tokens/s\n", s.n_prompt, ms(s.prefill_ns),
          per_second(s.n_prompt, s.prefill_ns));
  fprintf(stderr, "llm_runner: decode: %zu tokens in %.3f ms, %.1f tokens/s\n", n_decoded, ms(s.decode_ns),
          per_second(n_decoded, s.decode_ns));
  if (constraint != nullptr) {
    fprintf(stderr,
            "llm_runner: grammar: %zu masks, %.1f us per mask (%zu state-cache misses, %zu local walks, %zu hits)%s\n",
            s.n_masks, s.n_masks ? static_cast<double>(s.mask_ns) / 1e3 / static_cast<double>(s.n_masks) : 0.0,
            constraint->masker().walks(), constraint->masker().local_walks(), constraint->masker().hits(),
            !s.grammar_ended && !s.stopped_at_eos ? "; the output is incomplete (--max-new-tokens reached)" : "");
  }
  if (s.speculate) {
    fprintf(stderr,
            "llm_runner: speculation: %zu steps (%zu with a draft), drafted %zu, accepted %zu (%.1f%%), "
            "%.2f accepted per step, %.2f tokens per step\n",
            s.steps, s.drafting_steps, s.drafted, s.accepted, s.drafted == 0 ? 0.0 : 100.0 * s.accepted / s.drafted,
            s.steps == 0 ? 0.0 : static_cast<double>(s.accepted) / s.steps,
            s.steps == 0 ? 0.0 : static_cast<double>(n_decoded) / s.steps);
  }
  fprintf(stderr,
          "llm_runner: memory: %zu bytes planned by MethodMeta (pools %zu, method allocator %zu, scratch %zu); "
          "peak RSS %ld KiB\n",
          mem.total(), pools, mem.method_allocator_bytes, mem.scratch_bytes, peak_rss_kib);
  // What sessions cost (session.h): each its KV cache; the slot (forward's activations, bookkeeping and scratch)
  // is shared. The runner itself runs one conversation on forward's own KV cache.
  if (md.session_memory_id != 0) {
    fprintf(stderr,
            "llm_runner: sessions: %zu KV bytes each (pool %lld); slot %zu bytes (activations, method allocator, "
            "scratch)\n",
            mem.session_bytes, static_cast<long long>(md.session_memory_id), mem.slot_bytes());
  } else {
    fprintf(stderr,
            "llm_runner: sessions: one (a program exported before sessions: its KV cache shares the activations' "
            "pool)\n");
  }
}

}  // namespace llm
}  // namespace ember
