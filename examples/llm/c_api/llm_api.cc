// ember_llm.h over examples/llm: DecoderProgram and its sessions, the sampler and the tokenizers, with the C API's
// status and message conventions (runtime/c_api/status.h).
#include <string.h>

#include <new>
#include <string>
#include <vector>

#include "examples/llm/c_api/include/ember/ember_llm.h"
#include "examples/llm/decoder_program.h"
#include "examples/llm/sampler.h"
#include "examples/llm/session.h"
#include "examples/llm/tokenizer/tokenizer.h"
#include "runtime/c_api/status.h"
#include "runtime/threads/posix_thread_pool.h"

struct ember_llm_program {
  std::unique_ptr<ember::llm::DecoderProgram> program;
};

struct ember_llm_session {
  std::unique_ptr<ember::llm::Session> session;
};

struct ember_llm_sampler {
  ember::llm::Sampler sampler;
};

struct ember_llm_tokenizer {
  std::unique_ptr<ember::llm::Tokenizer> tokenizer;
};

namespace {

using ember::Error;
using ember::Result;
using ember::c_api::begin_call;
using ember::c_api::fail;
using ember::c_api::fail_error;

bool size_ok(const char* call, const char* type, size_t size, size_t minimum, ember_status* status) {
  if (size >= minimum) return true;
  *status =
      fail(EMBER_BAD_STRUCT_SIZE, "%s: %s.size is %zu, below the %zu bytes of its first layout (set it to sizeof)",
           call, type, size, minimum);
  return false;
}

bool read_session_options(const char* call, const ember_llm_session_options* given, ember::llm::SessionOptions* out,
                          ember_status* status) {
  if (given == nullptr) return true;
  if (!size_ok(call, "ember_llm_session_options", given->size, sizeof(ember_llm_session_options), status)) return false;
  if (given->context_full != EMBER_LLM_CONTEXT_FULL_ERROR && given->context_full != EMBER_LLM_CONTEXT_FULL_SLIDE) {
    *status = fail(EMBER_INVALID_ARGUMENT, "%s: context_full is %d, neither EMBER_LLM_CONTEXT_FULL_ERROR nor _SLIDE",
                   call, static_cast<int>(given->context_full));
    return false;
  }
  if (given->sink_tokens < 0) {
    *status = fail(EMBER_INVALID_ARGUMENT, "%s: sink_tokens is %d", call, static_cast<int>(given->sink_tokens));
    return false;
  }
  out->context_full = given->context_full == EMBER_LLM_CONTEXT_FULL_SLIDE
                          ? ember::llm::SessionOptions::ContextFull::kSlidingWindow
                          : ember::llm::SessionOptions::ContextFull::kError;
  out->sink_tokens = static_cast<size_t>(given->sink_tokens);
  return true;
}

ember_status wrap_session(const char* call, Result<std::unique_ptr<ember::llm::Session>>&& made,
                          ember_llm_session** out) {
  if (!made.ok()) return fail_error(made.error(), "%s", call);
  ember_llm_session* s = new (std::nothrow) ember_llm_session;
  if (s == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the session handle", call);
  s->session = static_cast<std::unique_ptr<ember::llm::Session>&&>(made.get());
  *out = s;
  return EMBER_OK;
}

}  // namespace

extern "C" {

EMBER_API void ember_llm_options_init(ember_llm_options* options) {
  if (options == nullptr) return;
  memset(options, 0, sizeof(*options));
  options->size = sizeof(*options);
  options->threads = 1;
  options->slots = 1;
}

EMBER_API ember_status ember_llm_program_load(const char* path, const ember_llm_options* options,
                                              ember_llm_program** out) {
  begin_call();
  const char* call = "ember_llm_program_load";
  if (path == nullptr || out == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: path and out must not be NULL", call);
  *out = nullptr;
  ember_llm_options opts;
  ember_llm_options_init(&opts);
  ember_status status = EMBER_OK;
  if (options != nullptr) {
    if (!size_ok(call, "ember_llm_options", options->size, sizeof(ember_llm_options), &status)) return status;
    // Only the fields the caller's struct has (an older, shorter layout keeps the defaults for the rest).
    memcpy(&opts, options, options->size < sizeof(opts) ? options->size : sizeof(opts));
    opts.size = sizeof(opts);
  }
  if (opts.threads < 1 || opts.threads > ember::PosixThreadPool::kMaxThreads || opts.slots < 1) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: threads %d (1 .. %d) and slots %d (at least 1)", call,
                static_cast<int>(opts.threads), ember::PosixThreadPool::kMaxThreads, static_cast<int>(opts.slots));
  }
  std::vector<std::string> data_files;
  if (opts.data_file != nullptr) data_files.emplace_back(opts.data_file);
  Result<std::unique_ptr<ember::llm::DecoderProgram>> loaded =
      ember::llm::DecoderProgram::load(path, opts.threads, opts.slots, data_files);
  if (!loaded.ok()) return fail_error(loaded.error(), "%s: loading %s", call, path);
  ember_llm_program* p = new (std::nothrow) ember_llm_program;
  if (p == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the program handle", call);
  p->program = static_cast<std::unique_ptr<ember::llm::DecoderProgram>&&>(loaded.get());
  *out = p;
  return EMBER_OK;
}

EMBER_API void ember_llm_program_destroy(ember_llm_program* program) { delete program; }

EMBER_API ember_status ember_llm_program_info(const ember_llm_program* program, ember_llm_info* out) {
  begin_call();
  const char* call = "ember_llm_program_info";
  if (program == nullptr || out == nullptr)
    return fail(EMBER_INVALID_ARGUMENT, "%s: program and out must not be NULL", call);
  ember_status status = EMBER_OK;
  if (!size_ok(call, "ember_llm_info", out->size, sizeof(ember_llm_info), &status)) return status;
  const ember::llm::DecoderMetadata& m = program->program->metadata();
  out->max_seq_len = m.max_seq_len;
  out->vocab_size = m.vocab_size;
  out->bos_id = m.bos_id;
  out->num_eos_ids = m.eos_ids.size() < EMBER_LLM_MAX_EOS_IDS ? m.eos_ids.size() : EMBER_LLM_MAX_EOS_IDS;
  for (size_t i = 0; i < EMBER_LLM_MAX_EOS_IDS; ++i) out->eos_ids[i] = i < out->num_eos_ids ? m.eos_ids[i] : -1;
  out->n_layers = m.n_layers;
  out->session_bytes = program->program->memory().session_bytes;
  out->slot_bytes = program->program->memory().slot_bytes();
  return EMBER_OK;
}

EMBER_API void ember_llm_session_options_init(ember_llm_session_options* options) {
  if (options == nullptr) return;
  memset(options, 0, sizeof(*options));
  options->size = sizeof(*options);
  options->context_full = EMBER_LLM_CONTEXT_FULL_ERROR;
  options->sink_tokens = static_cast<int32_t>(ember::llm::SessionOptions().sink_tokens);
}

EMBER_API ember_status ember_llm_session_create(ember_llm_program* program, const ember_llm_session_options* options,
                                                ember_llm_session** out) {
  begin_call();
  const char* call = "ember_llm_session_create";
  if (program == nullptr || out == nullptr)
    return fail(EMBER_INVALID_ARGUMENT, "%s: program and out must not be NULL", call);
  *out = nullptr;
  ember::llm::SessionOptions opts;
  ember_status status = EMBER_OK;
  if (!read_session_options(call, options, &opts, &status)) return status;
  return wrap_session(call, program->program->new_session(opts), out);
}

EMBER_API ember_status ember_llm_session_restore(ember_llm_program* program, const char* path,
                                                 const ember_llm_session_options* options, ember_llm_session** out) {
  begin_call();
  const char* call = "ember_llm_session_restore";
  if (program == nullptr || path == nullptr || out == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: program, path and out must not be NULL", call);
  }
  *out = nullptr;
  ember::llm::SessionOptions opts;
  ember_status status = EMBER_OK;
  if (!read_session_options(call, options, &opts, &status)) return status;
  Result<std::unique_ptr<ember::llm::Session>> restored = program->program->restore_session(path, opts);
  if (!restored.ok()) return fail_error(restored.error(), "%s: %s", call, path);
  return wrap_session(call, static_cast<Result<std::unique_ptr<ember::llm::Session>>&&>(restored), out);
}

EMBER_API void ember_llm_session_destroy(ember_llm_session* session) { delete session; }

EMBER_API ember_status ember_llm_session_append(ember_llm_session* session, const int64_t* tokens, size_t n,
                                                const float** logits) {
  begin_call();
  const char* call = "ember_llm_session_append";
  if (session == nullptr || logits == nullptr || (tokens == nullptr && n > 0)) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: session, tokens and logits must not be NULL", call);
  }
  Result<const float*> r = session->session->append(tokens, n);
  if (!r.ok()) {
    return fail_error(r.error(), "%s: %zu tokens at position %zu", call, n, session->session->position());
  }
  *logits = r.get();
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_session_rewind(ember_llm_session* session, size_t position) {
  begin_call();
  if (session == nullptr) return fail(EMBER_INVALID_ARGUMENT, "ember_llm_session_rewind: session is NULL");
  Error e = session->session->rewind(position);
  if (e != Error::Ok) {
    return fail_error(e, "ember_llm_session_rewind: to %zu of a session at %zu", position,
                      session->session->position());
  }
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_session_position(const ember_llm_session* session, size_t* out) {
  begin_call();
  if (session == nullptr || out == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "ember_llm_session_position: session and out must not be NULL");
  }
  *out = session->session->position();
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_session_tokens(const ember_llm_session* session, int64_t* out, size_t capacity,
                                                size_t* count) {
  begin_call();
  const char* call = "ember_llm_session_tokens";
  if (session == nullptr || count == nullptr || (out == nullptr && capacity > 0)) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: session, out and count must not be NULL", call);
  }
  const std::vector<int64_t>& tokens = session->session->tokens();
  *count = tokens.size();
  const size_t n = tokens.size() < capacity ? tokens.size() : capacity;
  if (n > 0) memcpy(out, tokens.data(), n * sizeof(int64_t));
  if (tokens.size() > capacity) {
    return fail(EMBER_BUFFER_TOO_SMALL, "%s: the session holds %zu tokens; out has room for %zu", call, tokens.size(),
                capacity);
  }
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_session_fork(const ember_llm_session* session, ember_llm_session** out) {
  begin_call();
  const char* call = "ember_llm_session_fork";
  if (session == nullptr || out == nullptr)
    return fail(EMBER_INVALID_ARGUMENT, "%s: session and out must not be NULL", call);
  *out = nullptr;
  return wrap_session(call, session->session->fork(), out);
}

EMBER_API ember_status ember_llm_session_save(const ember_llm_session* session, const char* path) {
  begin_call();
  if (session == nullptr || path == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "ember_llm_session_save: session and path must not be NULL");
  }
  Error e = session->session->save(path);
  if (e != Error::Ok) return fail_error(e, "ember_llm_session_save: %s", path);
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_sampler_create(float temperature, uint64_t seed, float top_p,
                                                ember_llm_sampler** out) {
  begin_call();
  const char* call = "ember_llm_sampler_create";
  if (out == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: out is NULL", call);
  *out = nullptr;
  Result<ember::llm::Sampler> s = ember::llm::Sampler::create(temperature, seed, top_p);
  if (!s.ok()) return fail_error(s.error(), "%s: temperature %g, top_p %g", call, temperature, top_p);
  ember_llm_sampler* h = new (std::nothrow) ember_llm_sampler{s.get()};
  if (h == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the sampler handle", call);
  *out = h;
  return EMBER_OK;
}

EMBER_API void ember_llm_sampler_destroy(ember_llm_sampler* sampler) { delete sampler; }

EMBER_API ember_status ember_llm_sampler_sample(ember_llm_sampler* sampler, const float* logits, size_t n,
                                                int32_t* token) {
  begin_call();
  const char* call = "ember_llm_sampler_sample";
  if (sampler == nullptr || logits == nullptr || token == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: sampler, logits and token must not be NULL", call);
  }
  Result<int32_t> t = sampler->sampler.sample(logits, n);
  if (!t.ok()) return fail_error(t.error(), "%s: %zu logits", call, n);
  *token = t.get();
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_tokenizer_load(const char* path, ember_llm_tokenizer** out) {
  begin_call();
  const char* call = "ember_llm_tokenizer_load";
  if (path == nullptr || out == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: path and out must not be NULL", call);
  *out = nullptr;
  std::string why;
  Result<std::unique_ptr<ember::llm::Tokenizer>> t = ember::llm::load_tokenizer(path, &why);
  if (!t.ok()) return fail_error(t.error(), "%s: %s: %s", call, path, why.c_str());
  ember_llm_tokenizer* h = new (std::nothrow) ember_llm_tokenizer;
  if (h == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the tokenizer handle", call);
  h->tokenizer = static_cast<std::unique_ptr<ember::llm::Tokenizer>&&>(t.get());
  *out = h;
  return EMBER_OK;
}

EMBER_API void ember_llm_tokenizer_destroy(ember_llm_tokenizer* tokenizer) { delete tokenizer; }

EMBER_API ember_status ember_llm_tokenizer_encode(const ember_llm_tokenizer* tokenizer, const char* text, size_t length,
                                                  int32_t bos, int32_t* ids, size_t capacity, size_t* count) {
  begin_call();
  const char* call = "ember_llm_tokenizer_encode";
  if (tokenizer == nullptr || count == nullptr || (text == nullptr && length > 0) || (ids == nullptr && capacity > 0)) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: tokenizer, text, ids and count must not be NULL", call);
  }
  Result<std::vector<int32_t>> r = tokenizer->tokenizer->encode(std::string_view(text, length), bos != 0);
  if (!r.ok()) return fail_error(r.error(), "%s: %zu bytes of text", call, length);
  *count = r->size();
  const size_t n = r->size() < capacity ? r->size() : capacity;
  if (n > 0) memcpy(ids, r->data(), n * sizeof(int32_t));
  if (r->size() > capacity) {
    return fail(EMBER_BUFFER_TOO_SMALL, "%s: the text is %zu tokens; ids has room for %zu", call, r->size(), capacity);
  }
  return EMBER_OK;
}

EMBER_API ember_status ember_llm_tokenizer_decode(const ember_llm_tokenizer* tokenizer, const int32_t* ids, size_t n,
                                                  char* text, size_t capacity, size_t* length) {
  begin_call();
  const char* call = "ember_llm_tokenizer_decode";
  if (tokenizer == nullptr || length == nullptr || (ids == nullptr && n > 0) || (text == nullptr && capacity > 0)) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: tokenizer, ids, text and length must not be NULL", call);
  }
  Result<std::string> r = tokenizer->tokenizer->decode(std::vector<int32_t>(ids, ids + n));
  if (!r.ok()) return fail_error(r.error(), "%s: %zu ids", call, n);
  *length = r->size();
  if (r->size() + 1 > capacity) {
    return fail(EMBER_BUFFER_TOO_SMALL, "%s: the text is %zu bytes and its NUL; text has room for %zu", call, r->size(),
                capacity);
  }
  memcpy(text, r->data(), r->size());
  text[r->size()] = '\0';
  return EMBER_OK;
}

}  // extern "C"
