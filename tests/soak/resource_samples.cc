#include "tests/soak/resource_samples.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace ember {
namespace soak {

bool sanitizer_heap() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

namespace {

// Resident pages are statm's second field.
uint64_t read_rss_bytes() {
  char text[128];
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  unsigned long long size = 0, resident = 0;
  if (sscanf(text, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Entries of /proc/self/fd, read with getdents64 into a stack buffer (opendir would allocate); the descriptor
// doing the reading is left out.
uint64_t count_fds() {
  const int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  alignas(8) char buf[4096];
  uint64_t count = 0;
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const struct dirent64* d = reinterpret_cast<const struct dirent64*>(buf + off);
      if (d->d_name[0] != '.') ++count;
      off += d->d_reclen;
    }
  }
  close(fd);
  return count - 1;
}

uint64_t heap_in_use() {
  if (sanitizer_heap()) return 0;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 info = mallinfo2();
  // Small blocks from the arenas plus large ones mapped on their own.
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

}  // namespace

Sample sample_now(uint64_t step) {
  Sample s;
  s.step = step;
  s.rss_bytes = read_rss_bytes();
  s.fds = count_fds();
  s.heap_bytes = heap_in_use();
  return s;
}

SampleSeries::SampleSeries(std::string name, uint64_t warmup_steps, size_t max_samples, Tolerances tolerances)
    : name_(std::move(name)), warmup_steps_(warmup_steps), tolerances_(tolerances) {
  samples_.reserve(max_samples);
  error_.reserve(256);
}

const Sample* SampleSeries::baseline() const {
  return baseline_index_ < samples_.size() ? &samples_[baseline_index_] : nullptr;
}

bool SampleSeries::take(uint64_t step) {
  // Past the room reserved up front, a sample would grow the heap it measures: keep the last slot current.
  const Sample s = sample_now(step);
  if (samples_.size() == samples_.capacity()) {
    samples_.back() = s;
  } else {
    samples_.push_back(s);
  }
  if (baseline_index_ == SIZE_MAX && step >= warmup_steps_) baseline_index_ = samples_.size() - 1;
  return check(samples_.back());
}

bool SampleSeries::check(const Sample& s) {
  const Sample* base = baseline();
  if (base == nullptr || !error_.empty()) return error_.empty();
  char why[256];
  why[0] = '\0';
  if (s.fds > base->fds + tolerances_.fds) {
    snprintf(why, sizeof(why), "%s: %llu open file descriptors at step %llu, %llu after warm-up (tolerance %llu)",
             name_.c_str(), (unsigned long long)s.fds, (unsigned long long)s.step, (unsigned long long)base->fds,
             (unsigned long long)tolerances_.fds);
  } else if (!sanitizer_heap() && s.heap_bytes > base->heap_bytes + tolerances_.heap_bytes) {
    snprintf(why, sizeof(why), "%s: %llu heap bytes in use at step %llu, %llu after warm-up (tolerance %llu)",
             name_.c_str(), (unsigned long long)s.heap_bytes, (unsigned long long)s.step,
             (unsigned long long)base->heap_bytes, (unsigned long long)tolerances_.heap_bytes);
  } else if (!sanitizer_heap() && s.rss_bytes > base->rss_bytes + tolerances_.rss_bytes) {
    snprintf(why, sizeof(why), "%s: %llu resident bytes at step %llu, %llu after warm-up (tolerance %llu)",
             name_.c_str(), (unsigned long long)s.rss_bytes, (unsigned long long)s.step,
             (unsigned long long)base->rss_bytes, (unsigned long long)tolerances_.rss_bytes);
  }
  error_ = why;
  return error_.empty();
}

bool SampleSeries::finish(uint64_t steps, double seconds) {
  steps_ = steps;
  seconds_ = seconds;
  if (samples_.empty() || samples_.back().step != steps) take(steps);
  if (baseline() == nullptr && error_.empty()) {
    error_ = name_ + ": the run ended before its warm-up did, so nothing was checked";
  }
  return error_.empty();
}

// Least squares over the samples from the baseline on: how fast the field grows per step.
double SampleSeries::slope(uint64_t Sample::* field) const {
  if (baseline() == nullptr) return 0;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = baseline_index_; i < samples_.size(); ++i) {
    const double x = static_cast<double>(samples_[i].step), y = static_cast<double>(samples_[i].*field);
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  return den > 0 ? (n * sxy - sx * sy) / den : 0;
}

void SampleSeries::write_json(FILE* out) const {
  const Sample* base = baseline();
  fprintf(out, "{\"name\": \"%s\", \"steps\": %llu, \"seconds\": %.3f, \"steps_per_s\": %.1f, \"samples\": %zu, ",
          name_.c_str(), (unsigned long long)steps_, seconds_, seconds_ > 0 ? steps_ / seconds_ : 0.0, samples_.size());
  fprintf(out, "\"warmup_steps\": %llu, \"sanitizer_heap\": %s, ", (unsigned long long)warmup_steps_,
          sanitizer_heap() ? "true" : "false");
  const struct {
    const char* key;
    uint64_t Sample::* field;
    uint64_t tolerance;
  } fields[] = {{"rss", &Sample::rss_bytes, tolerances_.rss_bytes},
                {"fds", &Sample::fds, tolerances_.fds},
                {"heap", &Sample::heap_bytes, tolerances_.heap_bytes}};
  for (const auto& f : fields) {
    uint64_t peak = 0;
    for (const Sample& s : samples_) peak = std::max(peak, s.*(f.field));
    fprintf(out,
            "\"%s\": {\"first\": %llu, \"start\": %llu, \"peak\": %llu, \"end\": %llu, \"slope_per_step\": %.6g, "
            "\"tolerance\": %llu}, ",
            f.key, samples_.empty() ? 0ULL : (unsigned long long)(samples_.front().*(f.field)),
            base ? (unsigned long long)(base->*(f.field)) : 0ULL, (unsigned long long)peak,
            samples_.empty() ? 0ULL : (unsigned long long)(samples_.back().*(f.field)), slope(f.field),
            (unsigned long long)f.tolerance);
  }
  fprintf(out, "\"note\": \"%s\", \"ok\": %s, \"error\": \"%s\"}\n", note_.c_str(), error_.empty() ? "true" : "false",
          error_.c_str());
}

}  // namespace soak
}  // namespace ember
