// llm_runner: text generation with a decoder .pte exported by examples/llm/export.py.
//
//   llm_runner --model model.pte (--tokenizer tokenizer.json|tokenizer.model --prompt "text" | --prompt-ids "1 5 7")
//              [--max-new-tokens N] [--temperature T] [--seed S] [--threads N] [--ids] [--ignore-eos]
//              [--speculate D] [--grammar FILE.gbnf | --json-schema FILE.json] [--data FILE.ptd ...]
//   llm_runner --model model.pte --tokenizer tokenizer.json --chat [--chat-template tokenizer_config.json]
//              [--system TEXT] [--context-slide] [sampling and constraint flags as above]
//
// Loads the program (its `forward` with every buffer sized from MethodMeta) and the tokenizer, reads the metadata
// constant methods, prefills the prompt in one forward call (T = prompt length, input_pos 0; one call per token
// when the program has no dynamic shape), then decodes one token per call until an EOS id of the model
// (get_eos_ids; the tokenizer's EOS when the program states none) or N new tokens. Each token's text goes to
// stdout as it is produced (flushed); with --ids, or with --prompt-ids and no tokenizer, the generated ids
// instead, space-separated. A generated EOS is counted and printed by --ids, not as text. Statistics go to stderr.
//
// --prompt is encoded without special tokens, then the model's BOS (get_bos_id, else the tokenizer's) is put in
// front unless --no-bos; --prompt-ids are used as given. Sampling: temperature 0 (the default) is greedy argmax;
// T > 0 draws from softmax(logits / T) with xoshiro256** seeded by SplitMix64(S) (examples/llm/sampler.h), so a
// seed gives the same ids on every machine. --threads N splits the kernels' work (the linears' output features,
// attention's heads) over N threads, the calling one included; the ids are the same at any N.
//
// --speculate D (greedy only): speculative decoding by prompt lookup. Before each step the runner looks for the
// latest earlier occurrence of the last 3 tokens of prompt + output (else 2, else 1; prompt_lookup.h) and drafts
// the D tokens that followed it; one forward of [last token, draft] returns the logits of all 1 + D positions, the
// draft is accepted up to its first token that differs from the argmax, and the argmax after the accepted prefix
// is appended too. A step yields 1 to D + 1 tokens for one forward, which reads the weights once for all its
// tokens (what bounds decode), so it costs less than D + 1 decode steps (how much less: examples/llm/README.md).
// Rejected drafts' KV cache rows are simply overwritten by the next step, which starts at the first rejected
// position. The ids are those of plain greedy decoding as long as the kernels give a position the same logits
// whether it is computed alone or with others: 8da4w's do, fp32's differ by rounding (README). The program must
// return the logits of D + 1 positions (export.py --logits-rows D + 1 or more).
//
// --grammar / --json-schema constrain the output (examples/llm/grammar/): before each token the logits of every
// token the grammar does not allow next are set to -infinity, so greedy and sampled decoding both choose among
// allowed tokens only; an EOS id is allowed exactly when the text so far is complete, and generation stops when
// the grammar can take nothing more. Needs --tokenizer; not with --speculate.
//
// --data FILE.ptd (repeatable): the .ptd files holding the weights a program exported with external constants
// keeps outside itself (docs/external_data.md), mapped and prefaulted like the program's own.
//
// --chat: a conversation read from stdin, a user turn per line, over one session (examples/llm/runner/
// chat_loop.h: only each turn's new tokens are prefilled; /reset, /save FILE, /load FILE, /quit). The prompt is
// the conversation rendered by --chat-template (a tokenizer_config.json's chat_template; the plain format of
// ChatTemplate::plain() without it), each reply ends at EOS or --max-new-tokens and is followed by a newline.
// When the conversation outgrows max_seq_len the turn is refused (context full) unless --context-slide, which
// keeps a sliding window (SessionOptions::kSlidingWindow).
//
// Exit codes (as //:runner): 0 ok, 2 bad usage, 3 the program, a method or the tokenizer did not load, 4 the
// prompt was refused (too long for max_seq_len, ids outside the vocabulary, empty), 5 execution failed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <memory>
#include <string>
#include <vector>

#include "examples/llm/decoder_program.h"
#include "examples/llm/grammar/constraint.h"
#include "examples/llm/prompt_lookup.h"
#include "examples/llm/runner/chat_loop.h"
#include "examples/llm/runner/options.h"
#include "examples/llm/runner/stats.h"
#include "examples/llm/sampler.h"
#include "examples/llm/tokenizer/tokenizer.h"
#include "runtime/platform/platform.h"

using namespace ember;

namespace {

bool read_file(const char* path, std::string* out) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return false;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  const bool ok = ferror(f) == 0;
  fclose(f);
  return ok;
}

// --chat: the template, then the conversation on stdin (examples/llm/runner/chat_loop.h).
int chat(const llm::RunnerOptions& o, llm::DecoderProgram& program, const llm::Tokenizer& tokenizer,
         llm::Sampler& sampler, llm::GrammarConstraint* constraint, const llm::TokenVocabulary* vocab,
         const std::vector<int64_t>& eos) {
  llm::ChatTemplate chat_template = llm::ChatTemplate::plain();
  if (o.chat_template != nullptr) {
    llm::ChatTemplateError why;
    Result<llm::ChatTemplate> t = llm::ChatTemplate::load_tokenizer_config(o.chat_template, &why);
    if (!t.ok()) {
      fprintf(stderr, "llm_runner: chat template %s refused: %s\n", o.chat_template, why.describe().c_str());
      return 3;
    }
    chat_template = std::move(t.get());
  }
  llm::ChatLoopOptions options;
  options.system = o.system;
  options.max_new_tokens = o.max_new_tokens;
  options.sliding_window = o.context_slide;
  const int64_t bos = program.metadata().bos_id >= 0 ? program.metadata().bos_id : tokenizer.bos_id();
  options.bos_id = o.bos ? static_cast<int32_t>(bos) : -1;
  options.eos = eos;
  if (o.ignore_eos) options.eos.clear();
  const llm::ChatLoopParts parts{&program, &tokenizer, &chat_template, &sampler, constraint, vocab};
  return llm::run_chat(parts, options, stdin, stdout);
}

}  // namespace

int main(int argc, char** argv) {
  ember_pal_init();
  llm::RunnerOptions o;
  std::vector<int64_t> prompt;
  if (int rc = llm::parse_options(argc, argv, &o, &prompt)) return rc;
  const bool constrained = o.grammar != nullptr || o.json_schema != nullptr;
  Result<llm::Sampler> sampler = llm::Sampler::create(o.temperature, o.seed);
  if (!sampler.ok()) return llm::usage(argv[0]);

  // Load: the program, then the tokenizer.
  const uint64_t load_t0 = ember_pal_ticks_ns();
  Result<std::unique_ptr<llm::DecoderProgram>> loaded =
      llm::DecoderProgram::load(o.model, static_cast<int>(o.threads), 1, o.data_files);
  if (!loaded.ok()) {
    fprintf(stderr, "llm_runner: model %s refused: %s\n", o.model, error_name(loaded.error()));
    return 3;
  }
  llm::DecoderProgram& program = **loaded;
  const llm::DecoderMetadata& md = program.metadata();
  std::unique_ptr<llm::Tokenizer> tokenizer;
  if (o.tokenizer != nullptr) {
    std::string why;
    Result<std::unique_ptr<llm::Tokenizer>> tok = llm::load_tokenizer(o.tokenizer, &why);
    if (!tok.ok()) {
      fprintf(stderr, "llm_runner: tokenizer %s refused: %s: %s\n", o.tokenizer, error_name(tok.error()), why.c_str());
      return 3;
    }
    tokenizer = std::move(tok.get());
    if (static_cast<int64_t>(tokenizer->vocab_size()) > md.vocab_size) {
      fprintf(stderr, "llm_runner: tokenizer %s has %zu tokens but the model only %lld logits\n", o.tokenizer,
              tokenizer->vocab_size(), static_cast<long long>(md.vocab_size));
      return 3;
    }
  }
  std::vector<int64_t> eos = md.eos_ids;
  if (eos.empty() && tokenizer != nullptr && tokenizer->eos_id() >= 0) eos.push_back(tokenizer->eos_id());
  // The constraint: the tokens' bytes, the grammar, its matcher.
  std::unique_ptr<llm::TokenVocabulary> vocab;
  std::unique_ptr<llm::GrammarConstraint> constraint;
  if (constrained) {
    const char* path = o.grammar != nullptr ? o.grammar : o.json_schema;
    std::string text, why;
    if (!read_file(path, &text)) {
      fprintf(stderr, "llm_runner: cannot read %s\n", path);
      return 3;
    }
    Result<std::unique_ptr<llm::TokenVocabulary>> v = llm::TokenVocabulary::from_tokenizer(*tokenizer, eos);
    if (!v.ok()) {
      fprintf(stderr, "llm_runner: the tokenizer's token bytes: %s\n", error_name(v.error()));
      return 3;
    }
    vocab = std::move(v.get());
    constraint = o.grammar != nullptr ? llm::GrammarConstraint::load_gbnf(text, *vocab, &why)
                                      : llm::GrammarConstraint::load_json_schema(text, *vocab, &why);
    if (constraint == nullptr) {
      fprintf(stderr, "llm_runner: %s refused: %s\n", path, why.c_str());
      return 3;
    }
  }
  const uint64_t load_ns = ember_pal_ticks_ns() - load_t0;
  if (o.chat) return chat(o, program, *tokenizer, *sampler, constraint.get(), vocab.get(), eos);
  const bool print_ids = o.ids || tokenizer == nullptr;
  if (o.speculate > 0 && (o.speculate >= md.logits_rows || !md.dynamic_shape)) {
    fprintf(stderr,
            "llm_runner: --speculate %ld needs a program whose forward takes %ld tokens and returns the logits of as "
            "many positions, but %s returns %lld (get_logits_rows)%s; export it with --logits-rows %ld or more\n",
            o.speculate, o.speculate + 1, o.model, static_cast<long long>(md.logits_rows),
            md.dynamic_shape ? "" : " and takes one token per call", o.speculate + 1);
    return 2;
  }

  // The prompt's ids.
  const uint64_t t0 = ember_pal_ticks_ns();
  if (o.prompt != nullptr) {
    Result<std::vector<int32_t>> enc = tokenizer->encode(o.prompt, false, false);
    if (!enc.ok()) {
      fprintf(stderr, "llm_runner: the prompt could not be encoded: %s\n", error_name(enc.error()));
      return 4;
    }
    const int64_t bos = md.bos_id >= 0 ? md.bos_id : tokenizer->bos_id();
    if (o.bos && bos >= 0) prompt.push_back(bos);
    prompt.insert(prompt.end(), enc->begin(), enc->end());
  }
  const size_t n_prompt = prompt.size();
  const long long max_seq = static_cast<long long>(md.max_seq_len);
  if (n_prompt == 0) {
    fprintf(stderr, "llm_runner: prompt refused (InvalidArgument): it has no tokens\n");
    return 4;
  }
  for (size_t i = 0; i < n_prompt; ++i) {
    if (prompt[i] < 0 || prompt[i] >= md.vocab_size) {
      fprintf(stderr,
              "llm_runner: prompt refused (InvalidArgument): token %lld at %zu is outside the vocabulary "
              "[0, %lld)\n",
              static_cast<long long>(prompt[i]), i, static_cast<long long>(md.vocab_size));
      return 4;
    }
  }
  // Positions fed to the KV cache: the prompt, then every generated token but the last.
  if (static_cast<long long>(n_prompt) >= max_seq) {
    fprintf(stderr,
            "llm_runner: prompt refused (InvalidArgument): %zu prompt tokens, but the model's "
            "max_seq_len is %lld (at most %lld prompt tokens)\n",
            n_prompt, max_seq, max_seq - 1);
    return 4;
  }
  if (static_cast<long long>(n_prompt) + o.max_new_tokens - 1 > max_seq) {
    fprintf(stderr,
            "llm_runner: prompt refused (InvalidArgument): %zu prompt tokens + %ld new tokens need %lld "
            "KV cache positions (the last new token is not fed back), but the model's max_seq_len is %lld; "
            "use --max-new-tokens %lld or less\n",
            n_prompt, o.max_new_tokens, static_cast<long long>(n_prompt) + o.max_new_tokens - 1, max_seq,
            max_seq - static_cast<long long>(n_prompt) + 1);
    return 4;
  }

  // One forward call into `logits` (its last `rows` positions, in order); the exit code when it fails (4: an
  // input refused, 5: execution failed).
  const float* logits = nullptr;
  auto forward = [&](const int64_t* ids, size_t n, size_t pos, const char* what, size_t rows = 1) {
    bool in_execute = false;
    Result<const float*> out = program.forward_rows(ids, n, static_cast<int64_t>(pos), rows, &in_execute);
    if (out.ok()) {
      logits = *out;
      return 0;
    }
    fprintf(stderr, "llm_runner: %s at position %zu %s: %s\n", what, pos, in_execute ? "failed" : "refused an input",
            error_name(out.error()));
    return in_execute ? 5 : 4;
  };

  // Prefill: the whole prompt in one call (a token per call without dynamic shapes).
  const uint64_t prefill_t0 = ember_pal_ticks_ns();
  if (md.dynamic_shape) {
    if (int rc = forward(prompt.data(), n_prompt, 0, "prefill")) return rc;
  } else {
    for (size_t i = 0; i < n_prompt; ++i) {
      if (int rc = forward(&prompt[i], 1, i, "prefill")) return rc;
    }
  }
  const uint64_t prefill_ns = ember_pal_ticks_ns() - prefill_t0;

  // Decode. `context` is the prompt then every generated token (prompt lookup searches it); the last generated
  // token is the one not yet fed, at position context.size() - 1.
  std::vector<int64_t> context = prompt;
  std::vector<int64_t> generated;
  int64_t prev = prompt.back();
  uint64_t ttft_ns = 0;
  uint64_t decode_t0 = 0;
  bool stopped_at_eos = false;
  bool done = false;
  // Appends the token chosen from `row` (vocab logits) and writes it out; sets `done` at EOS or N new tokens.
  // Returns the id, or -1 when sampling failed.
  std::vector<uint32_t> mask(constraint ? constraint->words() : 0);
  std::vector<float> masked(constraint ? static_cast<size_t>(md.vocab_size) : 0);
  uint64_t mask_ns = 0;
  size_t n_masks = 0;
  bool grammar_ended = false;
  auto take = [&](const float* row) -> int64_t {
    if (constraint) {
      // Tokens past the tokenizer's vocabulary (padding) have no bytes: never allowed.
      const uint64_t m0 = ember_pal_ticks_ns();
      constraint->mask(mask.data());
      llm::mask_logits(mask.data(), vocab->size(), row, static_cast<size_t>(md.vocab_size), masked.data());
      mask_ns += ember_pal_ticks_ns() - m0;
      ++n_masks;
      row = masked.data();
    }
    Result<int32_t> next = sampler->sample(row, static_cast<size_t>(md.vocab_size));
    if (!next.ok()) {
      fprintf(stderr, "llm_runner: sampling failed: %s\n", error_name(next.error()));
      return -1;
    }
    const int64_t id = *next;
    if (constraint && !constraint->accept(static_cast<int32_t>(id))) {
      fprintf(stderr, "llm_runner: the grammar allows no token here (%s)\n",
              constraint->overflowed() ? "a matcher bound was passed" : "no allowed token in the vocabulary");
      return -1;
    }
    generated.push_back(id);
    context.push_back(id);
    if (generated.size() == 1) {
      ttft_ns = ember_pal_ticks_ns() - t0;
      decode_t0 = ember_pal_ticks_ns();
    }
    bool is_eos = false;
    for (int64_t e : eos) is_eos = is_eos || e == id;
    if (print_ids) {
      printf(generated.size() == 1 ? "%lld" : " %lld", static_cast<long long>(id));
    } else if (!is_eos) {
      // A model's vocabulary may be padded past the tokenizer's: such an id is written as <id>.
      const bool known = static_cast<uint64_t>(id) < tokenizer->vocab_size();
      Result<std::string> piece = known ? tokenizer->decode(static_cast<int32_t>(prev), static_cast<int32_t>(id))
                                        : Result<std::string>(Error::NotFound);
      if (piece.ok()) {
        fwrite(piece->data(), 1, piece->size(), stdout);
      } else {
        printf("<%lld>", static_cast<long long>(id));
      }
    }
    fflush(stdout);
    prev = id;
    if (is_eos && (!o.ignore_eos || constraint)) {
      stopped_at_eos = true;
      done = true;
    }
    if (constraint && !is_eos && constraint->done()) grammar_ended = done = true;
    if (static_cast<long>(generated.size()) >= o.max_new_tokens) done = true;
    return id;
  };
  if (take(logits) < 0) return 5;
  size_t steps = 0, drafting_steps = 0, drafted = 0, accepted = 0;
  std::vector<int64_t> draft;
  std::vector<int64_t> batch;  // the last token then the draft: one verifying forward
  while (!done) {
    const size_t pos = context.size() - 1;
    ++steps;
    // Drafts past the last new token or the cache's end would be computed for nothing (or refused).
    size_t max_draft = static_cast<size_t>(o.speculate);
    const size_t left = static_cast<size_t>(o.max_new_tokens) - generated.size() - 1;
    const size_t room = static_cast<size_t>(md.max_seq_len) - 1 - pos;
    max_draft = max_draft < left ? max_draft : left;
    max_draft = max_draft < room ? max_draft : room;
    llm::prompt_lookup(context.data(), context.size(), max_draft, &draft);
    if (draft.empty()) {
      if (int rc = forward(&context.back(), 1, pos, "decode")) return rc;
      if (take(logits) < 0) return 5;
      continue;
    }
    // Verify: row i holds the logits after the last token and draft[0 .. i); draft[i] is accepted while it is
    // what greedy decoding would have chosen there.
    ++drafting_steps;
    drafted += draft.size();
    batch.assign(1, context.back());
    batch.insert(batch.end(), draft.begin(), draft.end());
    if (int rc = forward(batch.data(), batch.size(), pos, "speculative decode", batch.size())) return rc;
    const float* rows = logits;
    for (size_t i = 0; i <= draft.size() && !done; ++i) {
      const int64_t id = take(rows + i * static_cast<size_t>(md.vocab_size));
      if (id < 0) return 5;
      if (i == draft.size() || id != draft[i]) break;
      ++accepted;
    }
  }
  const uint64_t decode_ns = ember_pal_ticks_ns() - decode_t0;
  printf("\n");
  fflush(stdout);

  // Statistics.
  llm::RunStats stats;
  stats.threads = o.threads;
  stats.load_ns = load_ns;
  stats.n_prompt = n_prompt;
  stats.n_generated = generated.size();
  stats.stopped_at_eos = stopped_at_eos;
  stats.grammar_ended = grammar_ended;
  stats.ttft_ns = ttft_ns;
  stats.prefill_ns = prefill_ns;
  stats.decode_ns = decode_ns;
  stats.n_masks = n_masks;
  stats.mask_ns = mask_ns;
  stats.speculate = o.speculate > 0;
  stats.steps = steps;
  stats.drafting_steps = drafting_steps;
  stats.drafted = drafted;
  stats.accepted = accepted;
  llm::print_stats(stats, program, eos.size(), constraint.get());
  return 0;
}
