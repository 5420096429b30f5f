// What a soak watches while a workload repeats: the process's resident memory (/proc/self/statm), its open file
// descriptors (/proc/self/fd) and, with glibc's allocator, the heap bytes in use (mallinfo2), sampled every so
// many steps. After a warm-up (one-time setup: lazily mapped pages, the allocator's first arenas, the C
// library's buffers) every later sample must stay within a tolerance of the warm-up's; the summary (start, peak,
// end, least-squares slope per step) goes into the soak report.
//
// Tolerances, and why they catch a leak a step:
// - descriptors: none. Nothing a step does may keep one open.
// - heap bytes in use: 4 KiB. A step that allocates frees it all again, so in-use bytes return exactly to the
//   same count at each sample; the slack is for a one-time lazy allocation after warm-up. The smallest heap
//   block glibc hands out takes 32 bytes, so a leak of one block a step passes the tolerance after 128 steps.
// - resident memory: 1 MiB. Pages, not bytes: the allocator keeps freed pages or trims them, and a huge page
//   can come or go, so small moves are noise. A leak of b bytes a step shows as b x steps: past the tolerance
//   at 1 B a step over a million steps, 52 B a step over the CI tier's 20,000.
// Under AddressSanitizer the heap is ASan's (mallinfo2 does not see it) and its quarantine holds freed blocks
// by design, so resident memory grows there without a leak: only descriptors are checked, and LeakSanitizer's
// report at exit covers the heap.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <string>
#include <utility>
#include <vector>

namespace ember {
namespace soak {

struct Sample {
  uint64_t step = 0;  // executions (or decode steps) completed when sampled
  uint64_t rss_bytes = 0;
  uint64_t fds = 0;
  uint64_t heap_bytes = 0;  // 0 where the heap cannot be read (no glibc, or a sanitizer's allocator)
};

struct Tolerances {
  uint64_t fds = 0;
  uint64_t heap_bytes = 4 << 10;
  uint64_t rss_bytes = 1 << 20;
};

// Whether this build's heap is a sanitizer's (resident memory and mallinfo2 then say nothing about leaks).
bool sanitizer_heap();

// The process's numbers now. Reads /proc with open/read into stack buffers, so sampling itself leaves the heap
// as it found it.
Sample sample_now(uint64_t step);

class SampleSeries {
 public:
  // `warmup_steps`: the first sample at or past it is the baseline later ones are held to. `max_samples`: room
  // kept from the start, so storing a sample never grows the heap it measures.
  SampleSeries(std::string name, uint64_t warmup_steps, size_t max_samples, Tolerances tolerances = Tolerances());

  // Takes a sample; false (with the reason in error()) when it is past a tolerance of the baseline.
  bool take(uint64_t step);
  // The run's last step: a final sample and the whole series checked; false when any sample failed.
  bool finish(uint64_t steps, double seconds);
  const std::string& error() const { return error_; }
  // A line about what the part did besides its steps (the LLM part's slides and chats), for the report.
  void set_note(std::string note) { note_ = std::move(note); }
  const std::vector<Sample>& samples() const { return samples_; }

  // One JSON object: the name, steps, seconds, steps/s, and for each of rss, fds and heap its start (the
  // baseline), peak, end and slope per step after warm-up, the tolerances, and the verdict.
  void write_json(FILE* out) const;

 private:
  bool check(const Sample& s);
  const Sample* baseline() const;
  double slope(uint64_t Sample::* field) const;

  std::string name_;
  uint64_t warmup_steps_;
  Tolerances tolerances_;
  std::vector<Sample> samples_;
  size_t baseline_index_ = SIZE_MAX;
  uint64_t steps_ = 0;
  double seconds_ = 0;
  std::string error_;
  std::string note_;
};

}  // namespace soak
}  // namespace ember
