/* Runs a command and writes its peak resident set (ru_maxrss, KiB) and exit code to a file:
 *
 *   peak_rss RESULT_FILE COMMAND [ARGS...]      RESULT_FILE gets "maxrss_kb=N exit=N cpu_us=N"
 *
 * cpu_us is the command's user + system CPU time, all its threads: over its wall time it shows how many threads
 * really worked (the LLM benchmark's check of a runner's thread count).
 *
 * Why a launcher: Linux folds the address space a process had before exec() into its ru_maxrss, so a program
 * started straight from the benchmark's Python (hundreds of MB with torch loaded) would report at least that.
 * Started from this small static binary, the floor is this binary's own few hundred KiB (bench/README.md says
 * how much). stdout, stderr and the CPU affinity pass through to the command. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s RESULT_FILE COMMAND [ARGS...]\n", argv[0]);
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("peak_rss: fork");
    return 2;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror("peak_rss: exec");
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) {
    perror("peak_rss: wait4");
    return 2;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE* f = fopen(argv[1], "w");
  if (f == NULL) {
    perror("peak_rss: result file");
    return 2;
  }
  const long cpu_us =
      (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
  fprintf(f, "maxrss_kb=%ld exit=%d cpu_us=%ld\n", ru.ru_maxrss, code, cpu_us);
  fclose(f);
  return code;
}
