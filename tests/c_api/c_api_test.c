/* The C API from C (compiled as C99): loads zoo programs by file, by buffer and mapped, reads their metadata, runs
 * them in Ember's memory and in the caller's, and compares the outputs with eager PyTorch's
 * (tests/c_api/make_fixtures.py). Then hostile input: a truncated program, a wrong dtype or shape, a caller
 * buffer too small, a struct with a bad size; each must give a status and a message naming the fault. */
#include <ember/ember.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _WIN32
#include <malloc.h>
#endif
#include <string.h>

/* EMBER_BUFFER_ALIGNMENT-aligned blocks: C11's aligned_alloc, which Windows' C runtime lacks (_aligned_malloc, freed
 * by _aligned_free, there). */
static void* alloc_aligned(size_t bytes) {
#ifdef _WIN32
  return _aligned_malloc(bytes, EMBER_BUFFER_ALIGNMENT);
#else
  return aligned_alloc(EMBER_BUFFER_ALIGNMENT, bytes);
#endif
}

static void free_aligned(void* p) {
#ifdef _WIN32
  _aligned_free(p);
#else
  free(p);
#endif
}

static int g_failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                                                                \
  do {                                                                                                                \
    ember_status s_ = (call);                                                                                         \
    if (s_ != EMBER_OK) {                                                                                             \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, ember_status_name(s_), ember_last_error()); \
      ++g_failures;                                                                                                   \
      return;                                                                                                         \
    }                                                                                                                 \
  } while (0)

/* One tensor of a fixture (.io file). */
typedef struct {
  int32_t dtype;
  int32_t rank;
  int32_t shape[EMBER_MAX_RANK];
  void* data;
  size_t nbytes;
} fixture_tensor;

typedef struct {
  void* file; /* the .io file's bytes, which the tensors point into */
  char pte[1024];
  uint32_t num_inputs, num_outputs;
  fixture_tensor tensors[8];
} fixture;

static void* read_all(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  void* data;
  long n;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc((size_t)n + 1);
  if (data != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

static int read_fixture(const char* io_path, fixture* fx) {
  size_t size = 0, at = 16;
  uint32_t i;
  int32_t d;
  uint64_t nbytes;
  unsigned char* bytes = (unsigned char*)read_all(io_path, &size);
  fx->file = bytes;
  if (bytes == NULL || size < 16 || memcmp(bytes, "EMBERIO1", 8) != 0) return 0;
  memcpy(&fx->num_inputs, bytes + 8, 4);
  memcpy(&fx->num_outputs, bytes + 12, 4);
  if (fx->num_inputs + fx->num_outputs > 8) return 0;
  for (i = 0; i < fx->num_inputs + fx->num_outputs; ++i) {
    fixture_tensor* t = &fx->tensors[i];
    memcpy(&t->dtype, bytes + at, 4);
    memcpy(&t->rank, bytes + at + 4, 4);
    at += 8;
    for (d = 0; d < t->rank; ++d, at += 4) memcpy(&t->shape[d], bytes + at, 4);
    memcpy(&nbytes, bytes + at, 8);
    at += 8;
    t->nbytes = (size_t)nbytes;
    if (at + t->nbytes > size) return 0;
    t->data = bytes + at;
    at += t->nbytes;
  }
  /* NAME.io -> NAME.pte */
  if (strlen(io_path) + 2 > sizeof(fx->pte)) return 0;
  strcpy(fx->pte, io_path);
  strcpy(fx->pte + strlen(fx->pte) - 2, "pte");
  return 1;
}

static ember_tensor as_value(const fixture_tensor* t) {
  ember_tensor v;
  ember_tensor_init(&v);
  v.dtype = t->dtype;
  v.rank = t->rank;
  memcpy(v.shape, t->shape, sizeof(int32_t) * (size_t)t->rank);
  v.data = t->data;
  v.nbytes = t->nbytes;
  return v;
}

/* Float outputs within the tolerance fp32 kernels reach against eager PyTorch (blocked sums in another order). */
static void check_outputs(ember_method* m, const fixture* fx, const char* what) {
  uint32_t o;
  size_t n, i;
  for (o = 0; o < fx->num_outputs; ++o) {
    const fixture_tensor* want = &fx->tensors[fx->num_inputs + o];
    ember_tensor got;
    float worst = 0.0f;
    int32_t d;
    ember_tensor_init(&got);
    CHECK_OK(ember_method_output(m, o, &got));
    CHECK(got.dtype == want->dtype, "%s: output %u dtype %d, want %d", what, o, got.dtype, want->dtype);
    CHECK(got.rank == want->rank, "%s: output %u rank %d, want %d", what, o, got.rank, want->rank);
    for (d = 0; d < got.rank && d < want->rank; ++d) {
      CHECK(got.shape[d] == want->shape[d], "%s: output %u dim %d is %d, want %d", what, o, d, got.shape[d],
            want->shape[d]);
    }
    CHECK(got.nbytes == want->nbytes, "%s: output %u has %zu bytes, want %zu", what, o, got.nbytes, want->nbytes);
    if (got.nbytes != want->nbytes || got.dtype != EMBER_DTYPE_FLOAT32) continue;
    n = got.nbytes / 4;
    for (i = 0; i < n; ++i) {
      const float a = ((const float*)got.data)[i], b = ((const float*)want->data)[i];
      const float err = (float)fabs(a - b) / (1.0f + (float)fabs(b));
      if (!(err <= worst)) worst = err; /* NaN counts as worst */
    }
    CHECK(worst <= 1e-5f, "%s: output %u differs from eager PyTorch by %g (relative)", what, o, worst);
  }
}

static void run_fixture(ember_program* p, const fixture* fx, const ember_method_memory* memory, const char* what) {
  ember_method* m = NULL;
  uint32_t i;
  CHECK_OK(ember_method_load(p, "forward", memory, &m));
  for (i = 0; i < fx->num_inputs; ++i) {
    ember_tensor v = as_value(&fx->tensors[i]);
    CHECK_OK(ember_method_set_input(m, i, &v));
  }
  CHECK_OK(ember_method_execute(m));
  check_outputs(m, fx, what);
  ember_method_destroy(m);
}

/* Metadata, then runs in Ember's memory, in the caller's, and with the input pointed to instead of copied. */
static void test_program(const fixture* fx) {
  ember_program* p = NULL;
  ember_method_info info;
  ember_tensor_info in;
  size_t count = 0, i;
  const char* name = NULL;
  ember_method_memory memory;
  void* pools[8];
  size_t pool_bytes[8];
  void* method_bytes;
  void* scratch;
  ember_method* m = NULL;
  ember_tensor v;
  void* aligned_input;

  CHECK_OK(ember_program_load_file(fx->pte, NULL, &p));
  CHECK_OK(ember_program_method_count(p, &count));
  CHECK(count >= 1, "%s: %zu methods", fx->pte, count);
  CHECK_OK(ember_program_method_name(p, 0, &name));
  CHECK(strcmp(name, "forward") == 0, "%s: method 0 is '%s'", fx->pte, name);

  memset(&info, 0, sizeof(info));
  info.size = sizeof(info);
  CHECK_OK(ember_method_get_info(p, "forward", &info));
  CHECK(info.num_inputs == fx->num_inputs, "%zu inputs, want %u", info.num_inputs, fx->num_inputs);
  CHECK(info.num_outputs == fx->num_outputs, "%zu outputs, want %u", info.num_outputs, fx->num_outputs);
  CHECK(info.num_pools >= 1 && info.num_pools <= 8, "%zu pools", info.num_pools);
  CHECK(info.method_allocator_bytes > 0, "method allocator of %zu bytes", info.method_allocator_bytes);

  memset(&in, 0, sizeof(in));
  in.size = sizeof(in);
  CHECK_OK(ember_method_input_info(p, "forward", 0, &in));
  CHECK(in.kind == EMBER_VALUE_TENSOR && in.dtype == fx->tensors[0].dtype, "input 0: kind %d dtype %d", in.kind,
        in.dtype);
  CHECK(in.rank == fx->tensors[0].rank, "input 0: rank %d, want %d", in.rank, fx->tensors[0].rank);
  if (in.is_dynamic) {
    /* dynamic_mlp: batch bounded by 8 at export; the fixture runs 5 */
    CHECK(in.shape[0] == 8 && in.nbytes == 8u * 16u * 4u, "dynamic input 0: bound %d, %zu bytes", in.shape[0],
          in.nbytes);
  } else {
    CHECK(in.nbytes == fx->tensors[0].nbytes, "input 0: %zu bytes, want %zu", in.nbytes, fx->tensors[0].nbytes);
  }

  run_fixture(p, fx, NULL, "Ember's memory");

  /* The caller's memory, sized from the metadata. */
  ember_method_memory_init(&memory);
  memory.num_pools = info.num_pools;
  for (i = 0; i < info.num_pools; ++i) {
    CHECK_OK(ember_method_pool_bytes(p, "forward", i, &pool_bytes[i]));
    pools[i] = alloc_aligned((pool_bytes[i] + 15) / 16 * 16 + 16);
  }
  memory.pools = pools;
  memory.pool_bytes = pool_bytes;
  method_bytes = alloc_aligned((info.method_allocator_bytes + 15) / 16 * 16);
  scratch = alloc_aligned((info.scratch_bytes + 15) / 16 * 16 + 16);
  memory.method_allocator = method_bytes;
  memory.method_allocator_bytes = info.method_allocator_bytes;
  memory.scratch = scratch;
  memory.scratch_bytes = info.scratch_bytes;
  run_fixture(p, fx, &memory, "the caller's memory");

  /* Too small by one byte: refused with both numbers, nothing run. */
  memory.method_allocator_bytes = info.method_allocator_bytes - 1;
  CHECK(ember_method_load(p, "forward", &memory, &m) == EMBER_BUFFER_TOO_SMALL, "a short method allocator loaded");
  CHECK(m == NULL, "out set on failure");
  CHECK(strstr(ember_last_error(), "method allocator") != NULL, "message: %s", ember_last_error());
  printf("short method allocator: %s\n", ember_last_error());
  memory.method_allocator_bytes = info.method_allocator_bytes;
  pool_bytes[0] -= 1;
  CHECK(ember_method_load(p, "forward", &memory, &m) == EMBER_BUFFER_TOO_SMALL, "a short pool loaded");
  CHECK(strstr(ember_last_error(), "pool 0") != NULL, "message: %s", ember_last_error());
  pool_bytes[0] += 1;

  /* The input pointed to rather than copied. */
  CHECK_OK(ember_method_load(p, "forward", NULL, &m));
  aligned_input = alloc_aligned((fx->tensors[0].nbytes + 15) / 16 * 16);
  memcpy(aligned_input, fx->tensors[0].data, fx->tensors[0].nbytes);
  v = as_value(&fx->tensors[0]);
  v.data = aligned_input;
  CHECK_OK(ember_method_point_input(m, 0, &v));
  for (i = 1; i < fx->num_inputs; ++i) {
    ember_tensor w = as_value(&fx->tensors[i]);
    CHECK_OK(ember_method_set_input(m, i, &w));
  }
  CHECK_OK(ember_method_execute(m));
  check_outputs(m, fx, "a pointed input");
  ember_method_destroy(m);

  /* Destroying the program first is allowed: the last method releases it. */
  for (i = 0; i < info.num_pools; ++i) free_aligned(pools[i]);
  free_aligned(method_bytes);
  free_aligned(scratch);
  free_aligned(aligned_input);
  ember_program_destroy(p);
}

static void test_loaders(const fixture* fx) {
  size_t size = 0;
  void* bytes = read_all(fx->pte, &size);
  ember_program* p = NULL;
  ember_program_options options;
  void* aligned;
  CHECK(bytes != NULL, "reading %s", fx->pte);
  CHECK_OK(ember_program_load_buffer(bytes, size, NULL, &p));
  run_fixture(p, fx, NULL, "a copied buffer");
  ember_program_destroy(p);

  ember_program_options_init(&options);
  options.borrow_buffer = 1;
  aligned = alloc_aligned((size + 15) / 16 * 16);
  memcpy(aligned, bytes, size);
  CHECK_OK(ember_program_load_buffer(aligned, size, &options, &p));
  run_fixture(p, fx, NULL, "a borrowed buffer");
  ember_program_destroy(p);
  CHECK(ember_program_load_buffer((char*)aligned + 1, size - 1, &options, &p) == EMBER_INVALID_ARGUMENT,
        "a misaligned borrowed buffer loaded");
  CHECK(strstr(ember_last_error(), "aligned") != NULL, "message: %s", ember_last_error());

  ember_program_options_init(&options);
  options.threads = 2;
  CHECK_OK(ember_program_load_mapped(fx->pte, &options, &p));
  run_fixture(p, fx, NULL, "mapped, 2 threads");
  ember_program_destroy(p);
  free_aligned(aligned);
  free(bytes);
}

static void test_hostile(const fixture* fx) {
  size_t size = 0, cut;
  void* bytes = read_all(fx->pte, &size);
  ember_program* p = NULL;
  ember_program* refused = NULL;
  ember_method* m = NULL;
  ember_program_options options;
  ember_tensor v;
  ember_method_info info;
  CHECK(bytes != NULL, "reading %s", fx->pte);

  /* Truncated anywhere: refused, never a crash. */
  for (cut = 0; cut < size; cut += size / 7 + 1) {
    ember_status s = ember_program_load_buffer(bytes, cut, NULL, &p);
    if (s == EMBER_OK) {
      /* A cut past every byte the header and flatbuffer name may load; the segments are then short. */
      s = ember_method_load(p, "forward", NULL, &m);
      if (s == EMBER_OK) ember_method_destroy(m);
      ember_program_destroy(p);
    }
    if (cut < 64) {
      CHECK(s != EMBER_OK, "a program cut to %zu bytes loaded", cut);
    }
    CHECK(s == EMBER_OK || ember_last_error()[0] != '\0', "no message for a cut at %zu", cut);
  }
  {
    ember_status s = ember_program_load_buffer(bytes, size / 2, NULL, &p);
    if (s == EMBER_OK) {
      s = ember_method_load(p, "forward", NULL, &m);
      if (s == EMBER_OK) ember_method_destroy(m);
      ember_program_destroy(p);
    }
    CHECK(s != EMBER_OK, "half a program loaded a method");
    printf("half a program: %s\n", ember_last_error());
  }
  CHECK(ember_program_load_file("/nonexistent/x.pte", NULL, &p) == EMBER_ACCESS_FAILED, "a missing file loaded");
  CHECK(strstr(ember_last_error(), "/nonexistent/x.pte") != NULL, "message: %s", ember_last_error());

  CHECK_OK(ember_program_load_buffer(bytes, size, NULL, &p));
  CHECK(ember_method_load(p, "no_such_method", NULL, &m) == EMBER_INVALID_ARGUMENT ||
            ember_method_load(p, "no_such_method", NULL, &m) == EMBER_NOT_FOUND,
        "a missing method loaded");
  CHECK(strstr(ember_last_error(), "no_such_method") != NULL, "message: %s", ember_last_error());
  CHECK_OK(ember_method_load(p, "forward", NULL, &m));

  /* Wrong dtype. */
  v = as_value(&fx->tensors[0]);
  v.dtype = EMBER_DTYPE_INT64;
  CHECK(ember_method_set_input(m, 0, &v) != EMBER_OK, "an int64 input was taken");
  CHECK(strstr(ember_last_error(), "input 0") != NULL, "message: %s", ember_last_error());
  printf("wrong dtype: %s\n", ember_last_error());
  /* Wrong shape. */
  v = as_value(&fx->tensors[0]);
  v.shape[v.rank - 1] += 1;
  CHECK(ember_method_set_input(m, 0, &v) != EMBER_OK, "a wrong shape was taken");
  printf("wrong shape: %s\n", ember_last_error());
  /* Too few bytes for the shape. */
  v = as_value(&fx->tensors[0]);
  v.nbytes -= 4;
  CHECK(ember_method_set_input(m, 0, &v) != EMBER_OK, "a short buffer was taken");
  printf("short input: %s\n", ember_last_error());
  /* Rank out of range, index out of range, NULL data. */
  v = as_value(&fx->tensors[0]);
  v.rank = EMBER_MAX_RANK + 1;
  CHECK(ember_method_set_input(m, 0, &v) == EMBER_INVALID_ARGUMENT, "rank 17 was taken");
  v = as_value(&fx->tensors[0]);
  CHECK(ember_method_set_input(m, 99, &v) == EMBER_INVALID_ARGUMENT, "input 99 was taken");
  CHECK(strstr(ember_last_error(), "99") != NULL, "message: %s", ember_last_error());
  v.data = NULL;
  CHECK(ember_method_set_input(m, 0, &v) == EMBER_INVALID_ARGUMENT, "NULL data was taken");
  /* A struct whose size field was not set. */
  v = as_value(&fx->tensors[0]);
  v.size = 0;
  CHECK(ember_method_set_input(m, 0, &v) == EMBER_BAD_STRUCT_SIZE, "size 0 was taken");
  memset(&info, 0, sizeof(info));
  CHECK(ember_method_get_info(p, "forward", &info) == EMBER_BAD_STRUCT_SIZE, "info.size 0 was taken");
  CHECK(strstr(ember_last_error(), "ember_method_info") != NULL, "message: %s", ember_last_error());
  ember_program_options_init(&options);
  options.threads = -3;
  CHECK(ember_program_load_buffer(bytes, size, &options, &refused) == EMBER_INVALID_ARGUMENT && refused == NULL,
        "threads -3 was taken");
  /* Out-of-range output and a NULL handle. */
  CHECK(ember_method_output(m, 99, &v) != EMBER_OK, "output 99 was given");
  CHECK(ember_method_execute(NULL) == EMBER_INVALID_ARGUMENT, "a NULL method executed");
  ember_method_destroy(m);
  ember_program_destroy(p);
  free(bytes);
}

int main(int argc, char** argv) {
  int i;
  CHECK(ember_version() == ((EMBER_VERSION_MAJOR << 16) | (EMBER_VERSION_MINOR << 8) | EMBER_VERSION_PATCH),
        "ember_version() is %x", (unsigned)ember_version());
  CHECK(strcmp(ember_version_string(), EMBER_VERSION_STRING) == 0, "version %s", ember_version_string());
  CHECK(strcmp(ember_status_name(EMBER_BUFFER_TOO_SMALL), "EMBER_BUFFER_TOO_SMALL") == 0, "status name");
  for (i = 1; i < argc; ++i) {
    fixture fx;
    const size_t n = strlen(argv[i]);
    if (n < 3 || strcmp(argv[i] + n - 3, ".io") != 0) continue;
    memset(&fx, 0, sizeof(fx));
    if (!read_fixture(argv[i], &fx)) {
      fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    printf("%s\n", fx.pte);
    test_program(&fx);
    test_loaders(&fx);
    test_hostile(&fx);
    free(fx.file);
  }
  if (g_failures == 0) {
    printf("PASS\n");
  } else {
    printf("%d FAILURES\n", g_failures);
  }
  return g_failures == 0 ? 0 : 1;
}
