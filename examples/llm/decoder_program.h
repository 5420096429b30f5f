// A decoder .pte loaded for generation: its `forward` method with every buffer sized exactly from MethodMeta, and
// the metadata its constant methods state (ExecuTorch's names: get_max_seq_len, get_vocab_size, get_bos_id,
// get_eos_ids, get_n_layers, use_kv_cache, enable_dynamic_shape).
//
//   auto p = DecoderProgram::load("model.pte");            // Error values; the log says what was wrong
//   auto logits = (*p)->forward(ids, n, /*start_pos=*/0);  // prefill; then one id at a time (decode)
//
// forward(tokens int64 [1, T], input_pos int64 [1]) -> logits float32 [1, vocab], or [1, R, vocab] for the last
// R = ((T - 1) mod K) + 1 positions when the program states get_logits_rows = K (export.py --logits-rows: every
// position of a call of up to K tokens, from which speculative decoding verifies its drafted tokens). The KV cache
// lives in the method's planned memory and persists across calls: a call writes rows start_pos .. start_pos + n - 1
// and attends to rows 0 .. start_pos + t for its token t, so positions must be fed in order; a later call at an
// earlier start_pos (after rejected drafts) overwrites the rows it then reads. forward runs on the program's own KV
// cache; sessions (session.h) each have theirs and share everything else.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include "examples/llm/session.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {

struct DecoderMetadata {
  int64_t max_seq_len = 0;  // KV cache rows: prompt tokens plus fed-back generated tokens
  int64_t vocab_size = 0;
  int64_t bos_id = -1;  // -1: none stated
  std::vector<int64_t> eos_ids;
  int64_t n_layers = -1;  // -1: not stated
  bool use_kv_cache = true;
  bool dynamic_shape = true;  // false: the tokens input takes one token per call
  int64_t logits_rows = 1;  // K: a call of up to K tokens gets every position's logits (get_logits_rows)
  // The planned pool that holds the KV cache and nothing else (get_session_memory_id); 0 for a program exported
  // before sessions, whose cache shares the activations' pool.
  int64_t session_memory_id = 0;
};

// What the forward method holds, all from MethodMeta, known before load (DecoderProgram::plan).
struct DecoderMemory {
  std::vector<size_t> pool_bytes;  // planned pools (activations and the KV cache)
  size_t method_allocator_bytes = 0;
  size_t scratch_bytes = 0;
  // One session's state: the session pool's bytes (0 for a program exported before sessions).
  size_t session_bytes = 0;
  size_t total() const;
  // What running costs besides the sessions' state (a slot): the other pools (activations), the method
  // allocator and the kernels' scratch. A loaded program holds one slot and one state of its own (forward's);
  // each session adds session_bytes.
  size_t slot_bytes() const { return total() - session_bytes; }
};

class DecoderProgram {
 public:
  // Opens (mmaps) and verifies `path`, loads `forward` and reads the constant methods. AccessFailed when the file
  // cannot be read; InvalidProgram or the verifier's error when it is not a loadable program; NotFound when it
  // has no `forward`; NotSupported when its forward is not (tokens, input_pos) -> logits or it states no KV cache.
  // Metadata not stated by a constant method is taken from forward's signature (vocab size, max_seq_len) or
  // left unset (BOS, EOS). `threads` (1 to PosixThreadPool::kMaxThreads): forward's kernels split their work over
  // that many threads, the caller's included, and its scratch is planned for them. `slots`: forward loaded that many
  // times, so that many sessions can run at once from as many threads, each slot costing
  // DecoderMemory::slot_bytes (its activations, bookkeeping and scratch; the session pool is always a session's).
  // With one slot (the default) the program and its sessions are used from one thread at a time; with more, a
  // session's append waits for a free slot, and forward() for the first. NotSupported for more than one slot of
  // a program exported before sessions. `data_files`: .ptd files holding the constants the program keeps outside
  // itself (docs/external_data.md; asked in order, the first that has a name answers), mapped and prefaulted as
  // the program's own weights are.
  static Result<std::unique_ptr<DecoderProgram>> load(const char* path, int threads = 1, int slots = 1,
                                                      const std::vector<std::string>& data_files = {});
  ~DecoderProgram();
  // The memory load would allocate for `threads`, from MethodMeta, without loading forward.
  static Result<DecoderMemory> plan(const char* path, int threads = 1);

  // A session at position 0 with the program's initial KV values (the program must outlive it). NotSupported for
  // a second session of a program exported before sessions.
  Result<std::unique_ptr<Session>> new_session(const SessionOptions& options = SessionOptions());
  // A session saved by Session::save, checked field by field against this program (session_file.h):
  // InvalidExternalData naming what does not match, AccessFailed when the file cannot be read.
  Result<std::unique_ptr<Session>> restore_session(const char* path, const SessionOptions& options = SessionOptions());
  // The hash of the program file's bytes that session files carry (computed on first use).
  Result<uint64_t> fingerprint();
  size_t slots() const;

  const DecoderMetadata& metadata() const { return metadata_; }
  const DecoderMemory& memory() const { return memory_; }

  // Runs forward on tokens[0 .. n) at positions start_pos .. start_pos + n - 1 and returns the last position's
  // vocab_size logits (valid until the next call). InvalidArgument, before anything runs, when n is 0, the
  // positions pass max_seq_len, or a token is outside [0, vocab_size); the runtime's error when an input is refused
  // or execution fails (`*failed_in_execute` says which, for callers that report them apart).
  Result<const float*> forward(const int64_t* tokens, size_t n, int64_t start_pos, bool* failed_in_execute);

  // As forward, but returns the logits of the call's last `rows` positions, rows x vocab_size floats in position
  // order (the last position's row last). InvalidArgument, before anything runs, when rows is 0 or more than the
  // program returns for n tokens (((n - 1) mod metadata().logits_rows) + 1: all n when n <= logits_rows);
  // InvalidProgram when the output is not that many rows of Float logits.
  Result<const float*> forward_rows(const int64_t* tokens, size_t n, int64_t start_pos, size_t rows,
                                    bool* failed_in_execute);

 private:
  friend class Session;
  struct State;
  // A slot to run on, held until release_slot: the first free one (only the first when `first`), waiting for it.
  size_t acquire_slot(bool first);
  void release_slot(size_t slot);
  // Points the session pool of the slot's forward at `kv` (null: the program's own) unless it already is there.
  Error bind(size_t slot, uint8_t* kv);
  // A session whose KV bytes are `kv` ends (null: the one session of a program exported before sessions).
  void end_session(const uint8_t* kv);
  Error load_initial_values(size_t slot);
  // The KV bytes of cache rows 0 .. rows - 1: what fork copies and save writes. Each mutable buffer of the session
  // pool is sequence-major ([1, max_seq_len, ...], as model.py and kv_cache.py lay them out), so its first rows
  // are its first bytes; a pool with any other buffer is copied whole.
  size_t live_bytes(size_t rows) const;
  void copy_live(uint8_t* to, const uint8_t* from, size_t rows) const;  // pool to pool
  void gather_live(uint8_t* to, const uint8_t* pool, size_t rows) const;  // pool to packed, buffer after buffer
  void scatter_live(uint8_t* pool, const uint8_t* from, size_t rows) const;  // packed to pool
  Result<const float*> run_rows(size_t slot, const int64_t* tokens, size_t n, int64_t start_pos, size_t rows,
                                bool* failed_in_execute);
  explicit DecoderProgram(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  DecoderMetadata metadata_;
  DecoderMemory memory_;
  // The session pool's buffers as (byte offset, bytes per cache row); empty: copied whole.
  struct KvRegion {
    size_t offset;
    size_t row_bytes;
  };
  std::vector<KvRegion> kv_regions_;
};

}  // namespace llm
}  // namespace ember
