#include "examples/llm/decoder_program.h"

#include <stdlib.h>
#include <string.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

#include "examples/llm/session_file.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/data_file/flat_tensor_file.h"
#include "runtime/core/log.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/constant_use.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/runner/memory_claims.h"
#include "runtime/threads/posix_thread_pool.h"

namespace ember {
namespace llm {
namespace {

using Buffer = AlignedBuffer;
Buffer allocate(size_t bytes) { return allocate_aligned(bytes); }

// A method with its own memory, exactly as MethodMeta states it, checked against the machine first.
struct LoadedMethod {
  std::vector<Buffer> buffers;
  std::vector<Span<uint8_t>> pools;
  std::unique_ptr<HierarchicalAllocator> planned;
  std::unique_ptr<MemoryAllocator> method_allocator;
  std::unique_ptr<MemoryAllocator> temp_allocator;
  MemoryManager manager;
  std::unique_ptr<Method> method;
  MemoryClaims claims;
};

// `threads`: the pool's size, so kernels that give each thread its own scratch (attention) get a slice each.
// `shared_pool` (memory id, 0 for none) is planned over `shared` instead of bytes of its own (a slot beyond the
// first: its session pool is always rebound before it runs, so it borrows the first slot's for load).
// `data`: the .ptd files external constants are found in (null: none).
Result<std::unique_ptr<LoadedMethod>> load_method(const Program& program, const char* name, int threads = 1,
                                                  int64_t shared_pool = 0, uint8_t* shared = nullptr,
                                                  const ExternalData* data = nullptr) {
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) {
    EMBER_LOG(ERROR, "the program has no method '%s' (%s)", name, error_name(meta.error()));
    return meta.error();
  }
  std::unique_ptr<LoadedMethod> m(new LoadedMethod());
  char why[320];
  if (!read_memory_claims(meta.get(), physical_memory_bytes(), &m->claims, why, sizeof(why), threads)) {
    EMBER_LOG(ERROR, "%s", why);
    return Error::MemoryAllocationFailed;
  }
  for (size_t p = 0; p < m->claims.num_pools; ++p) {
    if (static_cast<int64_t>(p) + 1 == shared_pool) {
      m->pools.emplace_back(shared, m->claims.pool_bytes[p]);
      continue;
    }
    m->buffers.push_back(allocate(m->claims.pool_bytes[p]));
    EMBER_CHECK_OR_RETURN_ERROR(m->buffers.back() != nullptr, MemoryAllocationFailed,
                                "cannot allocate pool %zu of method '%s': %zu bytes", p + 1, name,
                                m->claims.pool_bytes[p]);
    m->pools.emplace_back(m->buffers.back().get(), m->claims.pool_bytes[p]);
  }
  m->planned.reset(new HierarchicalAllocator(Span<Span<uint8_t>>(m->pools.data(), m->pools.size())));
  m->buffers.push_back(allocate(m->claims.method_allocator_bytes));
  uint8_t* method_buffer = m->buffers.back().get();
  m->buffers.push_back(allocate(m->claims.scratch_bytes));
  uint8_t* temp_buffer = m->buffers.back().get();
  EMBER_CHECK_OR_RETURN_ERROR(method_buffer != nullptr && temp_buffer != nullptr, MemoryAllocationFailed,
                              "cannot allocate the method allocator (%zu bytes) and kernel scratch (%zu bytes) of "
                              "method '%s'",
                              m->claims.method_allocator_bytes, m->claims.scratch_bytes, name);
  m->method_allocator.reset(new MemoryAllocator(method_buffer, m->claims.method_allocator_bytes));
  m->temp_allocator.reset(new MemoryAllocator(temp_buffer, m->claims.scratch_bytes));
  m->manager.method_allocator = m->method_allocator.get();
  m->manager.planned_memory = m->planned.get();
  m->manager.temp_allocator = m->temp_allocator.get();
  m->manager.threads = threads;
  Result<Method> method = program.load_method(name, &m->manager, data);
  if (!method.ok()) {
    EMBER_LOG(ERROR, "method '%s' did not load: %s", name, error_name(method.error()));
    return method.error();
  }
  m->method.reset(new Method(std::move(method.get())));
  return m;
}

bool has_method(const Program& program, const char* name) {
  for (size_t i = 0; i < program.num_methods(); ++i) {
    Result<const char*> n = program.get_method_name(i);
    if (n.ok() && strcmp(*n, name) == 0) return true;
  }
  return false;
}

// The Int (or Bool, as 0/1) outputs of constant method `name`; an empty vector when the program has no such
// method. InvalidProgram when it has one whose outputs are not scalars.
Result<std::vector<int64_t>> constant_ints(const Program& program, const char* name) {
  std::vector<int64_t> values;
  if (!has_method(program, name)) return values;
  Result<std::unique_ptr<LoadedMethod>> m = load_method(program, name);
  if (!m.ok()) return m.error();
  Method& method = *(*m)->method;
  EMBER_CHECK_OR_RETURN_ERROR(method.num_inputs() == 0, InvalidProgram,
                              "metadata method '%s' takes %zu inputs; a constant method takes none", name,
                              method.num_inputs());
  const Error e = method.execute();
  if (e != Error::Ok) {
    EMBER_LOG(ERROR, "metadata method '%s' failed: %s", name, error_name(e));
    return e;
  }
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    Result<EValue> v = method.output_value(i);
    if (!v.ok()) return v.error();
    EMBER_CHECK_OR_RETURN_ERROR(v->is_int() || v->is_bool(), InvalidProgram,
                                "metadata method '%s' output %zu is not an Int or Bool", name, i);
    values.push_back(v->is_int() ? v->as_int() : (v->as_bool() ? 1 : 0));
  }
  return values;
}

// One value of a single-output constant method into *out, or `fallback` when the program does not state it.
Error constant_int(const Program& program, const char* name, int64_t fallback, int64_t* out) {
  Result<std::vector<int64_t>> v = constant_ints(program, name);
  if (!v.ok()) return v.error();
  if (v->empty()) {
    *out = fallback;
    return Error::Ok;
  }
  EMBER_CHECK_OR_RETURN_ERROR(v->size() == 1, InvalidProgram, "metadata method '%s' returns %zu values; expected 1",
                              name, v->size());
  *out = (*v)[0];
  return Error::Ok;
}

// The session pool's buffers as regions of rows, when every one is sequence-major over max_seq_len rows; empty
// otherwise (the pool is then copied whole).
std::vector<std::pair<size_t, size_t>> kv_regions(const Method& method, uint32_t memory_id, int64_t max_seq_len) {
  std::vector<std::pair<size_t, size_t>> regions;
  const size_t n = method.pool_buffers(memory_id, nullptr, 0);
  std::vector<Method::PoolBuffer> buffers(n);
  method.pool_buffers(memory_id, buffers.data(), n);
  for (const Method::PoolBuffer& b : buffers) {
    const TensorImpl& t = *b.tensor;
    const bool rows = t.dim() >= 2 && t.sizes()[0] == 1 && t.sizes()[1] == max_seq_len && t.is_contiguous() &&
                      t.nbytes() % static_cast<size_t>(max_seq_len) == 0;
    if (!rows) return {};
    regions.emplace_back(static_cast<size_t>(b.offset), t.nbytes() / static_cast<size_t>(max_seq_len));
  }
  return regions;
}

// forward's memory from its MethodMeta, and the session pool's share of it.
Result<DecoderMemory> memory_of(const MemoryClaims& c, int64_t session_memory_id, const char* path) {
  DecoderMemory mem;
  mem.pool_bytes.assign(c.pool_bytes, c.pool_bytes + c.num_pools);
  mem.method_allocator_bytes = c.method_allocator_bytes;
  mem.scratch_bytes = c.scratch_bytes;
  if (session_memory_id != 0) {
    EMBER_CHECK_OR_RETURN_ERROR(session_memory_id >= 1 && static_cast<size_t>(session_memory_id) <= c.num_pools,
                                InvalidProgram, "%s: get_session_memory_id says pool %lld, but forward plans %zu pools",
                                path, static_cast<long long>(session_memory_id), c.num_pools);
    mem.session_bytes = c.pool_bytes[session_memory_id - 1];
  }
  return mem;
}

}  // namespace

size_t DecoderMemory::total() const {
  size_t t = method_allocator_bytes + scratch_bytes;
  for (size_t b : pool_bytes) t += b;
  return t;
}

struct DecoderProgram::State {
  ~State() { PosixThreadPool::destroy(pool); }  // after forward (declared later, destroyed first)
  PosixThreadPool* pool = nullptr;
  std::unique_ptr<MmapDataLoader> loader;
  // The .ptd files forward's external constants are found in, each one mapping (before the program and forward,
  // which point into them, so destroyed after).
  std::vector<std::unique_ptr<MmapDataLoader>> data_loaders;
  std::vector<std::unique_ptr<FlatTensorFile>> data_files;
  std::vector<const ExternalData*> data_list;
  std::unique_ptr<ExternalDataList> data;
  std::unique_ptr<Program> program;
  // forward, loaded once per slot: slots[0] is forward()'s and the only one of a program loaded with one slot.
  std::vector<std::unique_ptr<LoadedMethod>> slots;
  std::string path;
  uint64_t fingerprint = 0;  // of the file, once computed
  bool fingerprinted = false;
  // Session pool: forward's own bytes (load's), and the bytes each slot is bound to now (null: none valid,
  // rebind). With several slots, `bound` and `busy` change under `mutex`; a slot's holder alone runs it.
  uint8_t* own_state = nullptr;
  std::vector<const uint8_t*> bound;
  std::vector<bool> busy;
  std::mutex mutex;
  std::condition_variable freed;
  bool legacy_session_open = false;  // a program without a session pool: its one session exists
};

DecoderProgram::DecoderProgram(std::unique_ptr<State> state) : state_(std::move(state)) {}
DecoderProgram::~DecoderProgram() = default;

Result<std::unique_ptr<DecoderProgram>> DecoderProgram::load(const char* path, int threads, int slots,
                                                             const std::vector<std::string>& data_files) {
  EMBER_CHECK_OR_RETURN_ERROR(threads >= 1 && threads <= PosixThreadPool::kMaxThreads, InvalidArgument,
                              "threads = %d; give 1 to %d", threads, PosixThreadPool::kMaxThreads);
  std::unique_ptr<State> s(new State());
  if (threads > 1) {
    Result<PosixThreadPool*> pool = PosixThreadPool::create(threads);
    if (!pool.ok()) {
      EMBER_LOG(ERROR, "cannot start %d threads: %s", threads, error_name(pool.error()));
      return pool.error();
    }
    s->pool = pool.get();
  }
  // On demand, then prefaulted below for the weights forward reads whole.
  Result<MmapDataLoader> loader = MmapDataLoader::open(path);
  if (!loader.ok()) {
    EMBER_LOG(ERROR, "cannot read %s: %s", path, error_name(loader.error()));
    return loader.error();
  }
  s->loader.reset(new MmapDataLoader(std::move(loader.get())));
  Result<Program> program = Program::load(s->loader.get());
  if (!program.ok()) {
    EMBER_LOG(ERROR, "%s is not a loadable program: %s", path, error_name(program.error()));
    return program.error();
  }
  s->program.reset(new Program(std::move(program.get())));
  const Program& prog = *s->program;
  for (const std::string& file : data_files) {
    Result<MmapDataLoader> data_loader = MmapDataLoader::open(file.c_str());
    if (!data_loader.ok()) {
      EMBER_LOG(ERROR, "cannot read data file %s: %s", file.c_str(), error_name(data_loader.error()));
      return data_loader.error();
    }
    s->data_loaders.emplace_back(new MmapDataLoader(std::move(data_loader.get())));
    Result<FlatTensorFile> ptd = FlatTensorFile::load(s->data_loaders.back().get());
    if (!ptd.ok()) {
      EMBER_LOG(ERROR, "%s is not a loadable data file (.ptd): %s", file.c_str(), error_name(ptd.error()));
      return ptd.error();
    }
    s->data_files.emplace_back(new FlatTensorFile(std::move(ptd.get())));
    s->data_list.push_back(s->data_files.back().get());
  }
  if (!s->data_list.empty()) s->data.reset(new ExternalDataList(s->data_list.data(), s->data_list.size()));
  EMBER_CHECK_OR_RETURN_ERROR(has_method(prog, "forward"), NotFound, "%s has no method 'forward'", path);
  // The first forward reads every weight but the embedding table, so their pages are mapped in now rather than by
  // faults in the middle of prefill's matrix products; the table, of which each forward gathers a few rows, is
  // paged in by those rows (in fp32 it would add its whole size to the process's resident memory). Weights kept
  // in .ptd files are in those files' mappings, found by name as load finds them.
  EMBER_TRY(for_each_constant_read_whole(
      prog, "forward", [](const void* data, size_t nbytes, void*) { MmapDataLoader::prefault(data, nbytes); }, nullptr,
      s->data.get()));

  // forward's signature: (tokens int64 [1, T], input_pos int64 [1]) -> logits float32 [1, vocab].
  Result<MethodMeta> meta = prog.method_meta("forward");
  if (!meta.ok()) return meta.error();
  Result<TensorInfo> tokens = meta->input_tensor_meta(0);
  Result<TensorInfo> pos = meta->input_tensor_meta(1);
  Result<TensorInfo> logits = meta->output_tensor_meta(0);
  EMBER_CHECK_OR_RETURN_ERROR(
      meta->num_inputs() == 2 && tokens.ok() && pos.ok() && logits.ok() && tokens->scalar_type == ScalarType::Long &&
          tokens->sizes.size() == 2 && tokens->sizes[0] == 1 && pos->scalar_type == ScalarType::Long &&
          pos->sizes.size() == 1 && pos->sizes[0] == 1 && logits->scalar_type == ScalarType::Float &&
          (logits->sizes.size() == 2 || logits->sizes.size() == 3) && logits->sizes[0] == 1,
      NotSupported,
      "%s: method 'forward' is not forward(tokens Long [1, T], input_pos Long [1]) -> logits Float [1, vocab] "
      "or [1, rows, vocab] (an LLM decoder exported by examples/llm/export.py)",
      path);
  // [1, vocab], or [1, R, vocab] for the last R positions (R up to get_logits_rows, set by each call).
  const int64_t out_rows = logits->sizes.size() == 3 ? logits->sizes[1] : 1;
  const int64_t out_vocab = logits->sizes.back();

  DecoderMetadata md;
  EMBER_TRY(constant_int(prog, "get_max_seq_len", tokens->sizes[1] + 1, &md.max_seq_len));
  EMBER_TRY(constant_int(prog, "get_vocab_size", out_vocab, &md.vocab_size));
  EMBER_CHECK_OR_RETURN_ERROR(md.vocab_size == out_vocab, InvalidProgram,
                              "%s: get_vocab_size says %lld but forward returns %lld logits per row", path,
                              static_cast<long long>(md.vocab_size), static_cast<long long>(out_vocab));
  EMBER_TRY(constant_int(prog, "get_logits_rows", 1, &md.logits_rows));
  EMBER_CHECK_OR_RETURN_ERROR(md.logits_rows == out_rows && md.logits_rows >= 1, InvalidProgram,
                              "%s: get_logits_rows says %lld but forward returns up to %lld rows of logits", path,
                              static_cast<long long>(md.logits_rows), static_cast<long long>(out_rows));
  EMBER_CHECK_OR_RETURN_ERROR(md.max_seq_len >= 2, InvalidProgram, "%s: get_max_seq_len is %lld; at least 2 needed",
                              path, static_cast<long long>(md.max_seq_len));
  EMBER_TRY(constant_int(prog, "get_bos_id", -1, &md.bos_id));
  Result<std::vector<int64_t>> eos = constant_ints(prog, "get_eos_ids");
  if (!eos.ok()) return eos.error();
  md.eos_ids = std::move(eos.get());
  EMBER_TRY(constant_int(prog, "get_n_layers", -1, &md.n_layers));
  EMBER_TRY(constant_int(prog, "get_session_memory_id", 0, &md.session_memory_id));
  int64_t flag = 1;
  EMBER_TRY(constant_int(prog, "use_kv_cache", 1, &flag));
  md.use_kv_cache = flag != 0;
  EMBER_CHECK_OR_RETURN_ERROR(md.use_kv_cache, NotSupported,
                              "%s states use_kv_cache = false; this runner feeds each token once and needs the "
                              "model's KV cache",
                              path);
  EMBER_TRY(constant_int(prog, "enable_dynamic_shape", tokens->is_dynamic ? 1 : 0, &flag));
  md.dynamic_shape = flag != 0 && tokens->is_dynamic;

  EMBER_CHECK_OR_RETURN_ERROR(slots >= 1 && (slots == 1 || md.session_memory_id != 0), NotSupported,
                              "%s: %d slots asked; a program exported before sessions (no get_session_memory_id) "
                              "runs one, and any other at least one",
                              path, slots);
  for (int i = 0; i < slots; ++i) {
    Result<std::unique_ptr<LoadedMethod>> forward =
        i == 0 ? load_method(prog, "forward", threads, 0, nullptr, s->data.get())
               : load_method(prog, "forward", threads, md.session_memory_id, s->own_state, s->data.get());
    if (!forward.ok()) return forward.error();
    s->slots.push_back(std::move(forward.get()));
    s->slots.back()->method->set_thread_pool(s->pool);
    if (i == 0 && md.session_memory_id != 0) s->own_state = s->slots[0]->pools[md.session_memory_id - 1].data();
    s->bound.push_back(s->own_state);
    s->busy.push_back(false);
  }
  Result<DecoderMemory> mem = memory_of(s->slots[0]->claims, md.session_memory_id, path);
  if (!mem.ok()) return mem.error();
  s->path = path;

  std::unique_ptr<DecoderProgram> d(new DecoderProgram(std::move(s)));
  d->metadata_ = std::move(md);
  d->memory_ = std::move(mem.get());
  if (d->metadata_.session_memory_id != 0) {
    const Method& method = *d->state_->slots[0]->method;
    for (const auto& r :
         kv_regions(method, static_cast<uint32_t>(d->metadata_.session_memory_id), d->metadata_.max_seq_len)) {
      d->kv_regions_.push_back(KvRegion{r.first, r.second});
    }
  }
  return d;
}

Result<const float*> DecoderProgram::forward(const int64_t* tokens, size_t n, int64_t start_pos,
                                             bool* failed_in_execute) {
  return forward_rows(tokens, n, start_pos, 1, failed_in_execute);
}

Result<const float*> DecoderProgram::forward_rows(const int64_t* tokens, size_t n, int64_t start_pos, size_t rows,
                                                  bool* failed_in_execute) {
  *failed_in_execute = false;
  const size_t slot = acquire_slot(true);
  const Error e = bind(slot, nullptr);
  Result<const float*> r =
      e == Error::Ok ? run_rows(slot, tokens, n, start_pos, rows, failed_in_execute) : Result<const float*>(e);
  release_slot(slot);
  return r;
}

size_t DecoderProgram::slots() const { return state_->slots.size(); }

size_t DecoderProgram::acquire_slot(bool first) {
  State& st = *state_;
  if (st.slots.size() == 1) return 0;  // one thread at a time: nothing to wait for
  std::unique_lock<std::mutex> lock(st.mutex);
  size_t slot = 0;
  st.freed.wait(lock, [&] {
    for (slot = 0; slot < (first ? 1 : st.busy.size()); ++slot) {
      if (!st.busy[slot]) return true;
    }
    return false;
  });
  st.busy[slot] = true;
  return slot;
}

void DecoderProgram::release_slot(size_t slot) {
  State& st = *state_;
  if (st.slots.size() == 1) return;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    st.busy[slot] = false;
  }
  st.freed.notify_all();
}

Result<DecoderMemory> DecoderProgram::plan(const char* path, int threads) {
  Result<MmapDataLoader> loader = MmapDataLoader::open(path);
  if (!loader.ok()) {
    EMBER_LOG(ERROR, "cannot read %s: %s", path, error_name(loader.error()));
    return loader.error();
  }
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) {
    EMBER_LOG(ERROR, "%s is not a loadable program: %s", path, error_name(program.error()));
    return program.error();
  }
  Result<MethodMeta> meta = program->method_meta("forward");
  if (!meta.ok()) {
    EMBER_LOG(ERROR, "%s has no method 'forward'", path);
    return meta.error();
  }
  int64_t session_memory_id = 0;
  EMBER_TRY(constant_int(program.get(), "get_session_memory_id", 0, &session_memory_id));
  MemoryClaims claims;
  char why[320];
  if (!read_memory_claims(meta.get(), physical_memory_bytes(), &claims, why, sizeof(why), threads)) {
    EMBER_LOG(ERROR, "%s", why);
    return Error::MemoryAllocationFailed;
  }
  return memory_of(claims, session_memory_id, path);
}

Error DecoderProgram::bind(size_t slot, uint8_t* kv) {
  if (metadata_.session_memory_id == 0) return Error::Ok;  // one session, in the method's own memory
  State& st = *state_;
  uint8_t* target = kv != nullptr ? kv : st.own_state;
  std::unique_lock<std::mutex> lock(st.mutex, std::defer_lock);
  if (st.slots.size() > 1) lock.lock();  // end_session may clear it from another thread
  if (st.bound[slot] == target) return Error::Ok;
  const uint32_t id = static_cast<uint32_t>(metadata_.session_memory_id);
  EMBER_TRY(st.slots[slot]->method->bind_pool(id, Span<uint8_t>(target, memory_.session_bytes)));
  st.bound[slot] = target;
  return Error::Ok;
}

void DecoderProgram::end_session(const uint8_t* kv) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mutex, std::defer_lock);
  if (st.slots.size() > 1) lock.lock();
  if (kv == nullptr) st.legacy_session_open = false;
  for (const uint8_t*& b : st.bound) {
    if (b == kv) b = nullptr;  // the next run binds again (the address may come back)
  }
}

Error DecoderProgram::load_initial_values(size_t slot) {
  return state_->slots[slot]->method->load_initial_values(static_cast<uint32_t>(metadata_.session_memory_id));
}

size_t DecoderProgram::live_bytes(size_t rows) const {
  if (kv_regions_.empty()) return memory_.session_bytes;
  size_t bytes = 0;
  for (const KvRegion& r : kv_regions_) bytes += r.row_bytes * rows;
  return bytes;
}

void DecoderProgram::copy_live(uint8_t* to, const uint8_t* from, size_t rows) const {
  if (kv_regions_.empty()) memcpy(to, from, memory_.session_bytes);
  for (const KvRegion& r : kv_regions_) memcpy(to + r.offset, from + r.offset, r.row_bytes * rows);
}

void DecoderProgram::gather_live(uint8_t* to, const uint8_t* pool, size_t rows) const {
  if (kv_regions_.empty()) memcpy(to, pool, memory_.session_bytes);
  for (const KvRegion& r : kv_regions_) {
    memcpy(to, pool + r.offset, r.row_bytes * rows);
    to += r.row_bytes * rows;
  }
}

void DecoderProgram::scatter_live(uint8_t* pool, const uint8_t* from, size_t rows) const {
  if (kv_regions_.empty()) memcpy(pool, from, memory_.session_bytes);
  for (const KvRegion& r : kv_regions_) {
    memcpy(pool + r.offset, from, r.row_bytes * rows);
    from += r.row_bytes * rows;
  }
}

Result<uint64_t> DecoderProgram::fingerprint() {
  if (!state_->fingerprinted) {
    Result<uint64_t> h = session_fingerprint(state_->path.c_str());
    if (!h.ok()) return h.error();
    state_->fingerprint = h.get();
    state_->fingerprinted = true;
  }
  return state_->fingerprint;
}

Result<std::unique_ptr<Session>> DecoderProgram::new_session(const SessionOptions& options) {
  if (metadata_.session_memory_id == 0) {
    EMBER_CHECK_OR_RETURN_ERROR(!state_->legacy_session_open, NotSupported,
                                "%s was exported before sessions (no get_session_memory_id: its KV cache shares the "
                                "activations' pool), so it runs one session at a time; export it again with "
                                "examples/llm/export.py for more",
                                state_->path.c_str());
    state_->legacy_session_open = true;
    return std::unique_ptr<Session>(new Session(this, AlignedBuffer(), 0, options));
  }
  AlignedBuffer kv = allocate_aligned(memory_.session_bytes);
  EMBER_CHECK_OR_RETURN_ERROR(kv != nullptr, MemoryAllocationFailed, "cannot allocate a session's %zu KV bytes",
                              memory_.session_bytes);
  const size_t slot = acquire_slot(false);
  Error e = bind(slot, kv.get());
  if (e == Error::Ok) e = load_initial_values(slot);
  release_slot(slot);
  if (e != Error::Ok) {
    end_session(kv.get());
    return e;
  }
  return std::unique_ptr<Session>(new Session(this, std::move(kv), memory_.session_bytes, options));
}

Result<std::unique_ptr<Session>> DecoderProgram::restore_session(const char* path, const SessionOptions& options) {
  EMBER_CHECK_OR_RETURN_ERROR(metadata_.session_memory_id != 0, NotSupported,
                              "%s was exported before sessions (no get_session_memory_id), so its sessions cannot be "
                              "restored; export it again with examples/llm/export.py",
                              state_->path.c_str());
  Result<uint64_t> fp = fingerprint();
  if (!fp.ok()) return fp.error();
  AlignedBuffer kv = allocate_aligned(memory_.session_bytes);
  EMBER_CHECK_OR_RETURN_ERROR(kv != nullptr, MemoryAllocationFailed, "cannot allocate a session's %zu KV bytes",
                              memory_.session_bytes);
  std::vector<int64_t> tokens;
  std::vector<uint8_t> live;
  const SessionFileExpect expect{fp.get(), metadata_.max_seq_len, metadata_.vocab_size, live_bytes(0),
                                 live_bytes(1) - live_bytes(0)};
  EMBER_TRY(read_session_file(path, expect, &tokens, &live));
  // The rows past the tokens stay as allocated: attention never reads a row before a call writes it.
  scatter_live(kv.get(), live.data(), tokens.size());
  std::unique_ptr<Session> s(new Session(this, std::move(kv), memory_.session_bytes, options));
  s->tokens_ = std::move(tokens);
  return s;
}

Result<const float*> DecoderProgram::run_rows(size_t slot, const int64_t* tokens, size_t n, int64_t start_pos,
                                              size_t rows, bool* failed_in_execute) {
  *failed_in_execute = false;
  const DecoderMetadata& md = metadata_;
  EMBER_CHECK_OR_RETURN_ERROR(n > 0, InvalidArgument, "forward needs at least one token");
  // The program returns the last ((n - 1) mod logits_rows) + 1 positions (export.py --logits-rows).
  const size_t returned = (n - 1) % static_cast<size_t>(md.logits_rows) + 1;
  EMBER_CHECK_OR_RETURN_ERROR(rows >= 1 && rows <= returned, InvalidArgument,
                              "forward of %zu tokens returns the logits of its last %zu positions (get_logits_rows "
                              "%lld), not %zu",
                              n, returned, static_cast<long long>(md.logits_rows), rows);
  EMBER_CHECK_OR_RETURN_ERROR(
      start_pos >= 0 && static_cast<uint64_t>(start_pos) + n <= static_cast<uint64_t>(md.max_seq_len), InvalidArgument,
      "positions %lld .. %lld pass the model's max_seq_len (%lld KV cache rows)", static_cast<long long>(start_pos),
      static_cast<long long>(start_pos) + static_cast<long long>(n) - 1, static_cast<long long>(md.max_seq_len));
  for (size_t i = 0; i < n; ++i) {
    EMBER_CHECK_OR_RETURN_ERROR(tokens[i] >= 0 && tokens[i] < md.vocab_size, InvalidArgument,
                                "token %lld (at position %lld) is outside the vocabulary [0, %lld)",
                                static_cast<long long>(tokens[i]),
                                static_cast<long long>(start_pos) + static_cast<long long>(i),
                                static_cast<long long>(md.vocab_size));
  }
  Method& method = *state_->slots[slot]->method;
  const int32_t sizes[2] = {1, static_cast<int32_t>(n)};
  EMBER_TRY(method.set_input(0, ScalarType::Long, ArrayRef<int32_t>(sizes, 2), tokens, n * sizeof(int64_t)));
  const int32_t pos_size = 1;
  EMBER_TRY(method.set_input(1, ScalarType::Long, ArrayRef<int32_t>(&pos_size, 1), &start_pos, sizeof(int64_t)));
  const Error e = method.execute();
  if (e != Error::Ok) {
    *failed_in_execute = true;
    EMBER_LOG(ERROR, "forward at positions %lld .. %lld failed: %s", static_cast<long long>(start_pos),
              static_cast<long long>(start_pos) + static_cast<long long>(n) - 1, error_name(e));
    return e;
  }
  Result<Tensor> out = method.output(0);
  if (!out.ok()) return out.error();
  const int64_t want = static_cast<int64_t>(returned) * md.vocab_size;
  EMBER_CHECK_OR_RETURN_ERROR(out->scalar_type() == ScalarType::Float && out->numel() == want, InvalidProgram,
                              "forward returned %lld values of %s; expected %lld Float logits (%zu rows of %lld)",
                              static_cast<long long>(out->numel()), scalar_type_name(out->scalar_type()),
                              static_cast<long long>(want), returned, static_cast<long long>(md.vocab_size));
  return out->const_data_ptr<float>() + (returned - rows) * static_cast<size_t>(md.vocab_size);
}

}  // namespace llm
}  // namespace ember
