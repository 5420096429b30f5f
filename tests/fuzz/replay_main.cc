// The main of a fuzz target's corpus replay test: runs every file named on the command line (or found in a
// directory named there) through LLVMFuzzerTestOneInput once, in a build without libFuzzer (gcc, with or without
// --config=asan/ubsan), so the committed corpus and findings are regression tests in every build.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

void collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    fprintf(stderr, "replay: cannot stat %s\n", path.c_str());
    exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    fprintf(stderr, "replay: cannot list %s\n", path.c_str());
    exit(2);
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(dir);
  for (const std::string& n : names) collect(path + "/" + n, files);
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) collect(argv[i], &files);
  if (files.empty()) {
    fprintf(stderr, "replay: no inputs given; a replay of nothing would prove nothing\n");
    return 2;
  }
  for (const std::string& f : files) {
    FILE* in = fopen(f.c_str(), "rb");
    if (in == nullptr) {
      fprintf(stderr, "replay: cannot open %s\n", f.c_str());
      return 2;
    }
    std::vector<uint8_t> bytes;
    uint8_t chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
    fclose(in);
    // Printed first, so the input at fault is named even if it takes the process down.
    fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), bytes.size());
    // A copy of exactly the input's size, as libFuzzer passes it: reads past the end are caught.
    uint8_t* data = static_cast<uint8_t*>(malloc(bytes.size() ? bytes.size() : 1));
    memcpy(data, bytes.data(), bytes.size());
    LLVMFuzzerTestOneInput(data, bytes.size());
    free(data);
  }
  printf("replay: %zu inputs ran\n", files.size());
  return 0;
}
