// grammar_tool: runs a grammar constraint over a tokenizer's vocabulary without a model.
//
//   grammar_tool --tokenizer tokenizer.json (--grammar FILE.gbnf | --json-schema FILE.json)
//                [--print-grammar] [--sequences K --max-steps N --seed S] [--bench] [--verify]
//
// --print-grammar writes the GBNF (a schema's compiled grammar) and exits. --sequences K generates K token
// sequences, each step choosing uniformly among the allowed tokens (xoshiro256** seeded by S + sequence index)
// until an end token, a finished grammar or N steps, and writes one JSON line per sequence:
//   {"tokens": [ids], "masks": ["hex", ...], "text": "...", "complete": true|false}
// where masks[i] is the allowed-token bitmask before token i (bytes little-endian, bit i of byte i/8 = token i)
// and the last mask is the one after the last token. --bench prints the mask time per generated token: every
// step, with one constraint reset between sequences so its caches carry over as a server's compiled grammar's
// would: the first sequence's masks (cold caches), the later ones' (warm) and all.
// --verify checks every mask against the matcher alone: each token's bytes fed to the matcher and rolled back
// (no trie, no caches), the end tokens against can_end(); a difference exits 4.
// Exit codes: 0 ok, 2 bad usage, 3 the tokenizer or grammar was refused.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "examples/llm/grammar/constraint.h"
#include "examples/llm/grammar/gbnf.h"
#include "examples/llm/grammar/json_schema.h"
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

void json_escape(const std::string& s, std::string* out) {
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x80) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);  // bytes, not code points: the reader rebuilds them with latin-1
      *out += buf;
    } else {
      *out += static_cast<char>(c);
    }
  }
}

std::string hex(const uint32_t* mask, size_t words, size_t n_tokens) {
  static const char* d = "0123456789abcdef";
  std::string s;
  const size_t n_bytes = (n_tokens + 7) / 8;
  for (size_t i = 0; i < n_bytes && i / 4 < words; ++i) {
    const unsigned b = (mask[i / 4] >> (8 * (i % 4))) & 0xFF;
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

int usage() {
  fprintf(stderr,
          "usage: grammar_tool --tokenizer TOKENIZER (--grammar FILE | --json-schema FILE) [--print-grammar]\n"
          "                    [--sequences K] [--max-steps N] [--seed S] [--bench] [--verify]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ember_pal_init();
  const char* tokenizer_path = nullptr;
  const char* grammar_path = nullptr;
  const char* schema_path = nullptr;
  bool print = false, bench = false, verify = false;
  long sequences = 0, max_steps = 64;
  unsigned long long seed = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--print-grammar") == 0) print = true;
    else if (strcmp(a, "--bench") == 0) bench = true;
    else if (strcmp(a, "--verify") == 0) verify = true;
    else if (i + 1 >= argc) return usage();
    else if (strcmp(a, "--tokenizer") == 0) tokenizer_path = argv[++i];
    else if (strcmp(a, "--grammar") == 0) grammar_path = argv[++i];
    else if (strcmp(a, "--json-schema") == 0) schema_path = argv[++i];
    else if (strcmp(a, "--sequences") == 0) sequences = atol(argv[++i]);
    else if (strcmp(a, "--max-steps") == 0) max_steps = atol(argv[++i]);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(argv[++i], nullptr, 10);
    else return usage();
  }
  if ((grammar_path == nullptr) == (schema_path == nullptr)) return usage();
  std::string text;
  if (!read_file(grammar_path ? grammar_path : schema_path, &text)) {
    fprintf(stderr, "grammar_tool: cannot read %s\n", grammar_path ? grammar_path : schema_path);
    return 3;
  }
  std::string error, gbnf = text;
  if (schema_path != nullptr && !llm::json_schema_to_gbnf(text, &gbnf, &error)) {
    fprintf(stderr, "grammar_tool: schema %s refused: %s\n", schema_path, error.c_str());
    return 3;
  }
  if (print) {
    llm::Grammar g;
    if (!llm::parse_gbnf(gbnf, &g, &error)) {
      fprintf(stderr, "grammar_tool: grammar refused: %s\n", error.c_str());
      return 3;
    }
    fwrite(gbnf.data(), 1, gbnf.size(), stdout);
    return 0;
  }
  if (tokenizer_path == nullptr) return usage();
  std::string why;
  Result<std::unique_ptr<llm::Tokenizer>> tok = llm::load_tokenizer(tokenizer_path, &why);
  if (!tok.ok()) {
    fprintf(stderr, "grammar_tool: tokenizer %s refused: %s: %s\n", tokenizer_path, error_name(tok.error()),
            why.c_str());
    return 3;
  }
  Result<std::unique_ptr<llm::TokenVocabulary>> vocab = llm::TokenVocabulary::from_tokenizer(**tok);
  if (!vocab.ok()) return 3;
  const size_t n_tokens = (*vocab)->size();
  uint64_t mask_ns = 0, steps = 0, walks = 0, hits = 0, local = 0;
  // One constraint for every sequence, reset between them: the caches warm up as a server's would.
  std::unique_ptr<llm::GrammarConstraint> c = llm::GrammarConstraint::load_gbnf(gbnf, **vocab, &error);
  if (c == nullptr) {
    fprintf(stderr, "grammar_tool: grammar refused: %s\n", error.c_str());
    return 3;
  }
  uint64_t first_ns = 0, first_steps = 0;
  for (long s = 0; s < sequences; ++s) {
    c->reset();
    llm::Xoshiro256 rng(seed + static_cast<uint64_t>(s));
    std::vector<uint32_t> mask(c->words());
    std::vector<int32_t> ids;
    std::vector<std::string> masks;
    std::string out;
    bool complete = false;
    for (long step = 0; step <= max_steps; ++step) {
      const uint64_t t0 = ember_pal_ticks_ns();
      c->mask(mask.data());
      mask_ns += ember_pal_ticks_ns() - t0;
      ++steps;
      if (!bench) masks.push_back(hex(mask.data(), mask.size(), n_tokens));
      for (size_t i = 0; verify && i < n_tokens; ++i) {
        const int32_t id = static_cast<int32_t>(i);
        const std::string& b = (*vocab)->bytes(id);
        bool expect = false;
        if ((*vocab)->is_stop(id)) {
          expect = c->can_end();
        } else if (!b.empty() && c->matcher().accept_bytes(b)) {
          expect = true;
          c->matcher().rollback(1);
        }
        if (expect != (((mask[i >> 5] >> (i & 31)) & 1) != 0)) {
          fprintf(stderr, "grammar_tool: sequence %ld step %ld: token %d is %s by the mask but %s by the matcher\n", s,
                  step, id, expect ? "refused" : "allowed", expect ? "allowed" : "refused");
          return 4;
        }
      }
      if (step == max_steps) break;
      std::vector<int32_t> allowed;
      for (size_t i = 0; i < n_tokens; ++i) {
        if ((mask[i >> 5] >> (i & 31)) & 1) allowed.push_back(static_cast<int32_t>(i));
      }
      if (allowed.empty()) break;
      const int32_t id = allowed[static_cast<size_t>(rng.uniform() * static_cast<double>(allowed.size()))];
      if (!c->accept(id)) {
        fprintf(stderr, "grammar_tool: token %d was in the mask but refused\n", id);
        return 4;
      }
      ids.push_back(id);
      if ((*vocab)->is_stop(id)) {
        complete = true;
        break;
      }
      out += (*vocab)->bytes(id);
    }
    if (s == 0) first_ns = mask_ns, first_steps = steps;
    if (bench) continue;
    std::string line = "{\"tokens\": [";
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
    line += "], \"masks\": [";
    for (size_t i = 0; i < masks.size(); ++i) line += (i ? ", \"" : "\"") + masks[i] + "\"";
    line += "], \"text\": \"";
    json_escape(out, &line);
    line += std::string("\", \"complete\": ") + (complete ? "true" : "false") + "}\n";
    fwrite(line.data(), 1, line.size(), stdout);
  }
  walks = c->masker().walks();
  hits = c->masker().hits();
  local = c->masker().local_walks();
  if (bench && steps > first_steps) {
    printf("first sequence (cold caches): %llu masks, %.1f us per mask\n", static_cast<unsigned long long>(first_steps),
           static_cast<double>(first_ns) / 1e3 / static_cast<double>(first_steps));
    printf("later sequences (warm caches): %llu masks, %.1f us per mask\n",
           static_cast<unsigned long long>(steps - first_steps),
           static_cast<double>(mask_ns - first_ns) / 1e3 / static_cast<double>(steps - first_steps));
  }
  if (bench && steps > 0) {
    printf(
        "vocabulary %zu tokens, %llu masks, %.1f us per mask, %llu state-cache misses (%llu local walks), %llu hits\n",
        n_tokens, static_cast<unsigned long long>(steps),
        static_cast<double>(mask_ns) / 1e3 / static_cast<double>(steps), static_cast<unsigned long long>(walks),
        static_cast<unsigned long long>(local), static_cast<unsigned long long>(hits));
  }
  return 0;
}
