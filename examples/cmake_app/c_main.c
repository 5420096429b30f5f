/* The application of main.cc again, in C, through the C API (<ember/ember.h>, docs/c_api.md): it links the
 * bundle's Ember::c_api, loads a .pte, runs its forward method once and writes each tensor output's bytes.
 *
 *   ember_c_app MODEL.pte OUT_PREFIX [INPUT.bin]...
 *
 * Inputs are raw tensors of exactly the planned size (input i's shape as the program states it). Ember allocates
 * the method's memory here (ember_method_load with no memory); main.cc shows the caller-provided way in C++. */
#include <ember/ember.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char* what, ember_status s) {
  fprintf(stderr, "ember_c_app: %s: %s: %s\n", what, ember_status_name(s), ember_last_error());
  return 1;
}

/* Input `index` set from `path`: the file must hold the input's planned bytes. */
static int read_input(const ember_program* program, ember_method* method, size_t index, const char* path) {
  ember_tensor_info info;
  info.size = sizeof(info);
  ember_status s = ember_method_input_info(program, "forward", index, &info);
  if (s != EMBER_OK) return fail("input info", s);
  void* bytes = calloc(1, info.nbytes ? info.nbytes : 1);
  FILE* f = fopen(path, "rb");
  const size_t got = f ? fread(bytes, 1, info.nbytes, f) : 0;
  if (f) fclose(f);
  if (got != info.nbytes) {
    fprintf(stderr, "ember_c_app: input %zu needs %zu bytes from %s; read %zu\n", index, info.nbytes, path, got);
    free(bytes);
    return 1;
  }
  ember_tensor t;
  ember_tensor_init(&t);
  t.dtype = info.dtype;
  t.rank = info.rank;
  for (int32_t d = 0; d < info.rank; ++d) t.shape[d] = info.shape[d];
  t.data = bytes;
  t.nbytes = info.nbytes;
  s = ember_method_set_input(method, index, &t); /* copied: the buffer may go */
  free(bytes);
  return s == EMBER_OK ? 0 : fail("set input", s);
}

static int write_outputs(ember_method* method, const char* prefix) {
  size_t n = 0;
  ember_status s = ember_method_num_outputs(method, &n);
  if (s != EMBER_OK) return fail("outputs", s);
  for (size_t i = 0; i < n; ++i) {
    ember_tensor t;
    ember_tensor_init(&t);
    s = ember_method_output(method, i, &t);
    if (s != EMBER_OK) return fail("output", s);
    char path[1024];
    snprintf(path, sizeof(path), "%s%zu.bin", prefix, i);
    FILE* f = fopen(path, "wb");
    const size_t wrote = f ? fwrite(t.data, 1, t.nbytes, f) : 0;
    if (f) fclose(f);
    if (wrote != t.nbytes) {
      fprintf(stderr, "ember_c_app: cannot write output %zu (%zu bytes) to %s\n", i, t.nbytes, path);
      return 1;
    }
    printf("output %zu: %zu bytes -> %s\n", i, t.nbytes, path);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ember_c_app MODEL.pte OUT_PREFIX [INPUT.bin]...\n");
    return 2;
  }
  printf("Ember %s (built against %s)\n", ember_version_string(), EMBER_VERSION_STRING);
  ember_program* program = NULL;
  ember_status s = ember_program_load_mapped(argv[1], NULL, &program);
  if (s != EMBER_OK) return fail(argv[1], s);
  ember_method* method = NULL;
  s = ember_method_load(program, "forward", NULL, &method);
  int rc = s != EMBER_OK ? fail("load forward", s) : 0;
  for (int i = 3; rc == 0 && i < argc; ++i) rc = read_input(program, method, (size_t)(i - 3), argv[i]);
  if (rc == 0 && (s = ember_method_execute(method)) != EMBER_OK) rc = fail("execute", s);
  if (rc == 0) rc = write_outputs(method, argv[2]);
  ember_method_destroy(method);
  ember_program_destroy(program);
  return rc;
}
