#include "examples/llm/runner/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace ember {
namespace llm {
namespace {

bool parse_long(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  const long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "1 5 7" (spaces, tabs or commas between ids) -> ids; false on anything that is not a whole number.
bool parse_ids(const char* text, std::vector<int64_t>* ids) {
  const char* p = text;
  while (*p != '\0') {
    if (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n') {
      ++p;
      continue;
    }
    char* end = nullptr;
    const long long v = strtoll(p, &end, 10);
    if (end == p || (*end != '\0' && *end != ' ' && *end != '\t' && *end != ',' && *end != '\n')) return false;
    ids->push_back(v);
    p = end;
  }
  return true;
}

}  // namespace

int usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s --model MODEL.pte (--tokenizer TOKENIZER --prompt TEXT | --prompt-ids \"ID ID ...\")\n"
          "       [--max-new-tokens N] [--temperature T] [--seed S] [--threads N] [--ids] [--ignore-eos] "
          "[--no-bos] [--speculate D]\n"
          "       [--grammar FILE.gbnf | --json-schema FILE.json] [--data FILE.ptd ...]\n"
          "       %s --model MODEL.pte --tokenizer TOKENIZER --chat [--chat-template tokenizer_config.json] "
          "[--system TEXT] [--context-slide]\n",
          argv0, argv0);
  return 2;
}

int parse_options(int argc, char** argv, RunnerOptions* o, std::vector<int64_t>* prompt) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const bool has_value = i + 1 < argc;
    bool ok = true;
    if (strcmp(a, "--ids") == 0) {
      o->ids = true;
    } else if (strcmp(a, "--ignore-eos") == 0) {
      o->ignore_eos = true;
    } else if (strcmp(a, "--no-bos") == 0) {
      o->bos = false;
    } else if (strcmp(a, "--chat") == 0) {
      o->chat = true;
    } else if (strcmp(a, "--context-slide") == 0) {
      o->context_slide = true;
    } else if (!has_value) {
      fprintf(stderr, "llm_runner: %s: unknown flag or missing value\n", a);
      return usage(argv[0]);
    } else if (strcmp(a, "--model") == 0) {
      o->model = argv[++i];
    } else if (strcmp(a, "--tokenizer") == 0) {
      o->tokenizer = argv[++i];
    } else if (strcmp(a, "--data") == 0) {
      o->data_files.push_back(argv[++i]);
    } else if (strcmp(a, "--chat-template") == 0) {
      o->chat_template = argv[++i];
    } else if (strcmp(a, "--system") == 0) {
      o->system = argv[++i];
    } else if (strcmp(a, "--prompt") == 0) {
      o->prompt = argv[++i];
    } else if (strcmp(a, "--grammar") == 0) {
      o->grammar = argv[++i];
    } else if (strcmp(a, "--json-schema") == 0) {
      o->json_schema = argv[++i];
    } else if (strcmp(a, "--prompt-ids") == 0) {
      o->prompt_ids = argv[++i];
    } else if (strcmp(a, "--max-new-tokens") == 0) {
      ok = parse_long(argv[++i], 1, 1L << 30, &o->max_new_tokens);
    } else if (strcmp(a, "--speculate") == 0) {
      ok = parse_long(argv[++i], 0, 1L << 20, &o->speculate);
    } else if (strcmp(a, "--threads") == 0) {
      ok = parse_long(argv[++i], 1, 64, &o->threads);
    } else if (strcmp(a, "--temperature") == 0) {
      char* end = nullptr;
      const double t = strtod(argv[++i], &end);
      ok = end != argv[i] && *end == '\0' && t >= 0.0 && t < 1e30;
      o->temperature = static_cast<float>(t);
    } else if (strcmp(a, "--seed") == 0) {
      char* end = nullptr;
      o->seed = strtoull(argv[++i], &end, 10);
      ok = end != argv[i] && *end == '\0' && argv[i][0] != '-';
    } else {
      fprintf(stderr, "llm_runner: unknown flag %s\n", a);
      return usage(argv[0]);
    }
    if (!ok) {
      fprintf(stderr, "llm_runner: %s: '%s' is not a valid value\n", a, argv[i]);
      return usage(argv[0]);
    }
  }
  if (o->model == nullptr) {
    fprintf(stderr, "llm_runner: --model is required\n");
    return usage(argv[0]);
  }
  if (o->chat &&
      (o->prompt != nullptr || o->prompt_ids != nullptr || o->tokenizer == nullptr || o->speculate > 0 || o->ids)) {
    fprintf(stderr,
            "llm_runner: --chat reads the prompts from stdin: it needs --tokenizer, and no --prompt, "
            "--prompt-ids, --speculate or --ids\n");
    return usage(argv[0]);
  }
  if (!o->chat && (o->chat_template != nullptr || o->system != nullptr || o->context_slide)) {
    fprintf(stderr, "llm_runner: --chat-template, --system and --context-slide are for --chat\n");
    return usage(argv[0]);
  }
  if (!o->chat && (o->prompt == nullptr) == (o->prompt_ids == nullptr)) {
    fprintf(stderr, "llm_runner: give exactly one of --prompt and --prompt-ids\n");
    return usage(argv[0]);
  }
  if (o->prompt != nullptr && o->tokenizer == nullptr) {
    fprintf(stderr, "llm_runner: --prompt needs --tokenizer (or give --prompt-ids)\n");
    return usage(argv[0]);
  }
  if (o->prompt_ids != nullptr && !parse_ids(o->prompt_ids, prompt)) {
    fprintf(stderr, "llm_runner: --prompt-ids: '%s' is not a list of whole numbers\n", o->prompt_ids);
    return usage(argv[0]);
  }
  if (o->speculate > 0 && o->temperature > 0.0f) {
    // Verifying drafts against samples needs rejection sampling to keep the sampled distribution; only the
    // greedy rule (accept while the draft equals the argmax) is implemented.
    fprintf(stderr,
            "llm_runner: --speculate %ld needs greedy decoding (--temperature 0); drafts are verified against the "
            "argmax, not against samples\n",
            o->speculate);
    return usage(argv[0]);
  }
  const bool constrained = o->grammar != nullptr || o->json_schema != nullptr;
  if (constrained && (o->grammar != nullptr) == (o->json_schema != nullptr)) {
    fprintf(stderr, "llm_runner: give one of --grammar and --json-schema\n");
    return usage(argv[0]);
  }
  if (constrained && (o->tokenizer == nullptr || o->speculate > 0)) {
    fprintf(stderr, "llm_runner: %s needs --tokenizer (the tokens' bytes) and no --speculate\n",
            o->grammar != nullptr ? "--grammar" : "--json-schema");
    return usage(argv[0]);
  }
  return 0;
}

}  // namespace llm
}  // namespace ember
