#include "examples/llm/session.h"

#include <string.h>

#include <algorithm>
#include <utility>

#include "examples/llm/decoder_program.h"
#include "examples/llm/session_file.h"
#include "runtime/core/log.h"

namespace ember {
namespace llm {

Session::Session(DecoderProgram* program, AlignedBuffer kv, size_t kv_bytes, const SessionOptions& options)
    : program_(program), kv_(std::move(kv)), kv_bytes_(kv_bytes), options_(options) {}

Session::~Session() { program_->end_session(kv_.get()); }

// forward over the session's own cache: in calls of at most max_seq_len - 1 tokens (forward's bound), one token
// per call when the program takes one (enable_dynamic_shape = false).
Result<const float*> Session::run(const int64_t* tokens, size_t n) {
  const DecoderMetadata& md = program_->metadata();
  const size_t slot = program_->acquire_slot(false);
  Error e = program_->bind(slot, kv_.get());
  const size_t chunk = md.dynamic_shape ? static_cast<size_t>(md.max_seq_len) - 1 : 1;
  const float* logits = nullptr;
  bool failed_in_execute = false;
  for (size_t done = 0; e == Error::Ok && done < n;) {
    const size_t k = std::min(chunk, n - done);
    Result<const float*> r =
        program_->run_rows(slot, tokens + done, k, static_cast<int64_t>(position() + done), 1, &failed_in_execute);
    e = r.ok() ? Error::Ok : r.error();
    if (r.ok()) logits = r.get();
    done += k;
  }
  // With several slots the next session on this slot may overwrite its output at once: the session keeps a copy.
  if (e == Error::Ok && program_->slots() > 1) {
    logits_.assign(logits, logits + md.vocab_size);
    logits = logits_.data();
  }
  program_->release_slot(slot);
  if (e != Error::Ok) return e;
  return logits;
}

Result<const float*> Session::append(const int64_t* tokens, size_t n) {
  const DecoderMetadata& md = program_->metadata();
  EMBER_CHECK_OR_RETURN_ERROR(n > 0, InvalidArgument, "append needs at least one token");
  for (size_t i = 0; i < n; ++i) {
    EMBER_CHECK_OR_RETURN_ERROR(tokens[i] >= 0 && tokens[i] < md.vocab_size, InvalidArgument,
                                "token %lld (appended at position %zu) is outside the vocabulary [0, %lld)",
                                static_cast<long long>(tokens[i]), position() + i,
                                static_cast<long long>(md.vocab_size));
  }
  if (position() + n > static_cast<size_t>(md.max_seq_len)) EMBER_TRY(make_room(n));
  Result<const float*> r = run(tokens, n);
  if (r.ok()) tokens_.insert(tokens_.end(), tokens, tokens + n);
  return r;
}

// Context full: refuse, or slide the window (SessionOptions::ContextFull) so that n more tokens fit.
Error Session::make_room(size_t n) {
  const size_t max = static_cast<size_t>(program_->metadata().max_seq_len);
  EMBER_CHECK_OR_RETURN_ERROR(options_.context_full == SessionOptions::ContextFull::kSlidingWindow, OutOfResources,
                              "context full: %zu tokens + %zu new pass max_seq_len %zu (SessionOptions' "
                              "ContextFull::kSlidingWindow keeps the sink and recent tokens instead)",
                              position(), n, max);
  const size_t sinks = std::min(options_.sink_tokens, position());
  EMBER_CHECK_OR_RETURN_ERROR(sinks + n <= max, OutOfResources,
                              "context full: %zu new tokens after %zu sink tokens pass max_seq_len %zu", n, sinks, max);
  // Half the context after the sinks stays, so the next slide comes about as many tokens later.
  size_t recent = std::min(position() - sinks, (max - sinks) / 2);
  if (sinks + recent + n > max) recent = max - sinks - n;
  const std::vector<int64_t> kept(tokens_.end() - static_cast<ptrdiff_t>(recent), tokens_.end());
  // The sinks' cache rows stay as they are (same tokens, same positions); the recent ones move to follow them.
  tokens_.resize(sinks);
  ++slides_;
  if (recent == 0) return Error::Ok;
  Result<const float*> r = run(kept.data(), recent);
  if (!r.ok()) return r.error();  // the session keeps its sinks only
  tokens_.insert(tokens_.end(), kept.begin(), kept.end());
  return Error::Ok;
}

Error Session::rewind(size_t position) {
  EMBER_CHECK_OR_RETURN_ERROR(position <= tokens_.size(), InvalidArgument,
                              "cannot rewind to position %zu: the session holds %zu tokens", position, tokens_.size());
  tokens_.resize(position);
  return Error::Ok;
}

Result<std::unique_ptr<Session>> Session::fork() const {
  EMBER_CHECK_OR_RETURN_ERROR(kv_ != nullptr, NotSupported,
                              "the program was exported before sessions (no get_session_memory_id), so its one "
                              "session cannot be forked; export it again with examples/llm/export.py");
  AlignedBuffer kv = allocate_aligned(kv_bytes_);
  EMBER_CHECK_OR_RETURN_ERROR(kv != nullptr, MemoryAllocationFailed, "cannot allocate a session's %zu KV bytes",
                              kv_bytes_);
  program_->copy_live(kv.get(), kv_.get(), position());  // the rows after are written before they are read
  std::unique_ptr<Session> s(new Session(program_, std::move(kv), kv_bytes_, options_));
  s->tokens_ = tokens_;
  s->slides_ = slides_;
  return s;
}

Error Session::save(const char* path) const {
  EMBER_CHECK_OR_RETURN_ERROR(kv_ != nullptr, NotSupported,
                              "the program was exported before sessions (no get_session_memory_id), so its session "
                              "cannot be saved; export it again with examples/llm/export.py");
  Result<uint64_t> fp = program_->fingerprint();
  if (!fp.ok()) return fp.error();
  const std::vector<uint8_t> live = live_state();
  const SessionFileWrite w{fp.get(),   program_->metadata().max_seq_len, tokens_.data(), tokens_.size(), live.data(),
                           live.size()};
  return write_session_file(path, w);
}

std::vector<uint8_t> Session::live_state() const {
  if (kv_ == nullptr) return {};
  std::vector<uint8_t> live(program_->live_bytes(position()));
  program_->gather_live(live.data(), kv_.get(), position());
  return live;
}

}  // namespace llm
}  // namespace ember
