// One thread's memory bandwidth, STREAM-style: a read of a buffer many times the last-level cache (what LLM decode
// does to its weights: every byte once per token) and a copy between two such buffers (STREAM's "copy", counting
// the bytes read and the bytes written). Each is timed several times and the best is reported, as STREAM does.
//
//   membw [MiB per buffer (default 512)] [repeats (default 5)]
//   -> {"read_gbs": ..., "copy_gbs": ..., "buffer_mib": ..., "repeats": ...}   (GB = 1e9 bytes)
//
// Built by bench/llm.py with -O3 -march=native, so the loops below become the widest vector loads the CPU has.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Sum of every element in 32 independent chains (four 512-bit vectors' worth once vectorized), so the loop waits
// on loads, not on one vector addition's latency. The result is printed, so the compiler cannot drop the reads.
#define CHAINS 32
static double read_all(const double* a, size_t n) {
  double s[CHAINS] = {0};
  for (size_t i = 0; i + CHAINS <= n; i += CHAINS) {
    for (int k = 0; k < CHAINS; ++k) s[k] += a[i + k];
  }
  double total = 0;
  for (int k = 0; k < CHAINS; ++k) total += s[k];
  return total;
}

static void copy_all(double* restrict b, const double* restrict a, size_t n) {
  for (size_t i = 0; i < n; ++i) b[i] = a[i];
}

int main(int argc, char** argv) {
  const long mib = argc > 1 ? atol(argv[1]) : 512;
  const int repeats = argc > 2 ? atoi(argv[2]) : 5;
  if (mib < 1 || repeats < 1) {
    fprintf(stderr, "membw: usage: membw [MiB per buffer >= 1] [repeats >= 1]\n");
    return 2;
  }
  const size_t bytes = (size_t)mib << 20, n = bytes / sizeof(double);
  double* a = aligned_alloc(64, bytes);
  double* b = aligned_alloc(64, bytes);
  if (a == NULL || b == NULL) {
    fprintf(stderr, "membw: cannot allocate two buffers of %ld MiB\n", mib);
    return 1;
  }
  // Written first, so every page is mapped before any timing.
  for (size_t i = 0; i < n; ++i) a[i] = (double)(i & 1023);
  memset(b, 0, bytes);
  double best_read = 1e30, best_copy = 1e30, check = 0;
  for (int r = 0; r < repeats; ++r) {
    double t = now_s();
    check += read_all(a, n);
    t = now_s() - t;
    best_read = t < best_read ? t : best_read;
    t = now_s();
    copy_all(b, a, n);
    t = now_s() - t;
    best_copy = t < best_copy ? t : best_copy;
    check += b[(size_t)r * 4099 % n];
  }
  printf("{\"read_gbs\": %.2f, \"copy_gbs\": %.2f, \"buffer_mib\": %ld, \"repeats\": %d, \"checksum\": %.0f}\n",
         (double)bytes / best_read * 1e-9, 2.0 * (double)bytes / best_copy * 1e-9, mib, repeats, check);
  free(a);
  free(b);
  return 0;
}
