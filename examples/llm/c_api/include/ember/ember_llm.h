/* Ember's LLM C API: decoder programs exported by examples/llm/export.py, their sessions (each with its own KV
 * cache over the shared weights), next-token sampling and tokenizers. The same conventions as ember.h (opaque
 * handles, ember_status results, ember_last_error() for the message, `size`-first structs); libember_llm.so
 * exports both headers' calls. docs/c_api.md. */
#ifndef EMBER_EMBER_LLM_H_
#define EMBER_EMBER_LLM_H_

#include <ember/ember.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ember_llm_program ember_llm_program;
typedef struct ember_llm_session ember_llm_session;
typedef struct ember_llm_sampler ember_llm_sampler;
typedef struct ember_llm_tokenizer ember_llm_tokenizer;

typedef struct ember_llm_options {
  size_t size;           /* sizeof(ember_llm_options) */
  int32_t threads;       /* threads forward's kernels split each call over (1: the calling thread alone) */
  int32_t slots;         /* copies of forward loaded, so that many sessions run at once from different threads */
  const char* data_file; /* a .ptd holding the weights the program keeps outside itself, or NULL */
} ember_llm_options;

EMBER_API void ember_llm_options_init(ember_llm_options* options);

/* Maps and verifies a decoder program, loads forward and reads its metadata. options may be NULL. */
EMBER_API ember_status ember_llm_program_load(const char* path, const ember_llm_options* options,
                                              ember_llm_program** out);
/* Its sessions must have been destroyed first. NULL is ignored. */
EMBER_API void ember_llm_program_destroy(ember_llm_program* program);

#define EMBER_LLM_MAX_EOS_IDS 8

typedef struct ember_llm_info {
  size_t size; /* sizeof(ember_llm_info) */
  int64_t max_seq_len;
  int64_t vocab_size;
  int64_t bos_id; /* -1: not stated */
  size_t num_eos_ids;
  int64_t eos_ids[EMBER_LLM_MAX_EOS_IDS];
  int64_t n_layers; /* -1: not stated */
  /* One session's state (its KV cache), and what running costs besides (activations, bookkeeping, scratch). */
  size_t session_bytes;
  size_t slot_bytes;
} ember_llm_info;

EMBER_API ember_status ember_llm_program_info(const ember_llm_program* program, ember_llm_info* out);

#define EMBER_LLM_CONTEXT_FULL_ERROR 0   /* append past max_seq_len fails (EMBER_OUT_OF_RESOURCES), nothing changes */
#define EMBER_LLM_CONTEXT_FULL_SLIDE 1   /* keep the first sink_tokens and the most recent ones, prefill again */

typedef struct ember_llm_session_options {
  size_t size;          /* sizeof(ember_llm_session_options) */
  int32_t context_full; /* EMBER_LLM_CONTEXT_FULL_ERROR or EMBER_LLM_CONTEXT_FULL_SLIDE */
  int32_t sink_tokens;
} ember_llm_session_options;

EMBER_API void ember_llm_session_options_init(ember_llm_session_options* options);

/* A session at position 0 (options may be NULL). */
EMBER_API ember_status ember_llm_session_create(ember_llm_program* program, const ember_llm_session_options* options,
                                                ember_llm_session** out);
/* A session saved by ember_llm_session_save, checked against this program. */
EMBER_API ember_status ember_llm_session_restore(ember_llm_program* program, const char* path,
                                                 const ember_llm_session_options* options, ember_llm_session** out);
EMBER_API void ember_llm_session_destroy(ember_llm_session* session);

/* Prefills tokens[0 .. n) after the session's tokens and points *logits at the last one's vocab_size logits,
 * valid until the next call on any session of the program. On failure the session is as it was. */
EMBER_API ember_status ember_llm_session_append(ember_llm_session* session, const int64_t* tokens, size_t n,
                                                const float** logits);
/* Forgets the tokens from `position` on. */
EMBER_API ember_status ember_llm_session_rewind(ember_llm_session* session, size_t position);
EMBER_API ember_status ember_llm_session_position(const ember_llm_session* session, size_t* out);
/* Copies up to `capacity` of the session's tokens to `out` and sets *count to how many it holds (all of them:
 * EMBER_BUFFER_TOO_SMALL when that is more than `capacity`). */
EMBER_API ember_status ember_llm_session_tokens(const ember_llm_session* session, int64_t* out, size_t capacity,
                                                size_t* count);
/* A new session with a copy of this one's tokens and KV rows, continued independently. */
EMBER_API ember_status ember_llm_session_fork(const ember_llm_session* session, ember_llm_session** out);
EMBER_API ember_status ember_llm_session_save(const ember_llm_session* session, const char* path);

/* Next-token choice: temperature 0 is argmax (ties to the lowest id); above 0, seeded sampling within top_p. */
EMBER_API ember_status ember_llm_sampler_create(float temperature, uint64_t seed, float top_p, ember_llm_sampler** out);
EMBER_API void ember_llm_sampler_destroy(ember_llm_sampler* sampler);
EMBER_API ember_status ember_llm_sampler_sample(ember_llm_sampler* sampler, const float* logits, size_t n,
                                                int32_t* token);

/* A Hugging Face tokenizer.json or a SentencePiece model, told apart by its bytes. */
EMBER_API ember_status ember_llm_tokenizer_load(const char* path, ember_llm_tokenizer** out);
EMBER_API void ember_llm_tokenizer_destroy(ember_llm_tokenizer* tokenizer);
/* Token ids of `text` (`length` bytes of UTF-8), with the BOS id first when `bos` is nonzero: up to `capacity`
 * to `ids`, *count set to how many there are (EMBER_BUFFER_TOO_SMALL when more than `capacity`). */
EMBER_API ember_status ember_llm_tokenizer_encode(const ember_llm_tokenizer* tokenizer, const char* text, size_t length,
                                                  int32_t bos, int32_t* ids, size_t capacity, size_t* count);
/* The text of ids[0 .. n), NUL-terminated in `text` when it fits `capacity` (*length: its bytes without the NUL;
 * EMBER_BUFFER_TOO_SMALL, with *length set, when it does not). */
EMBER_API ember_status ember_llm_tokenizer_decode(const ember_llm_tokenizer* tokenizer, const int32_t* ids, size_t n,
                                                  char* text, size_t capacity, size_t* length);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_EMBER_LLM_H_ */
