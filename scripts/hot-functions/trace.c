// Runs one command under ptrace, single-stepping it to its exit, and prints (as hexadecimal
// offsets from the executable's load address, in the order they first run) every 16-byte
// granule of the executable's own image that it executed. Used by scripts/hot-functions.sh;
// a development tool, never part of satyrn.
//
// usage: trace OUT EXECUTABLE [ARGS...]   (stdin and stdout are the command's)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: trace OUT EXECUTABLE [ARGS...]\n");
    return 2;
  }
  pid_t child = fork();
  if (child < 0) { perror("fork"); return 1; }
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    execv(argv[2], argv + 2);
    _exit(127);
  }
  int status;
  if (waitpid(child, &status, 0) < 0 || !WIFSTOPPED(status)) { fprintf(stderr, "exec failed\n"); return 1; }
  char maps[64];
  snprintf(maps, sizeof maps, "/proc/%d/maps", child);
  FILE *m = fopen(maps, "r");
  if (!m) { perror(maps); return 1; }
  char line[4096];
  uint64_t base = 0, end = 0;
  while (fgets(line, sizeof line, m)) {
    unsigned long start, stop;
    if (sscanf(line, "%lx-%lx", &start, &stop) == 2 && strstr(line, argv[2])) {
      if (!base || start < base) base = start;
      if (stop > end) end = stop;
    }
  }
  fclose(m);
  if (!base) { fprintf(stderr, "%s is not mapped\n", argv[2]); return 1; }
  uint8_t *seen = calloc((end - base) / 16 + 1, 1);
  FILE *out = fopen(argv[1], "w");
  if (!seen || !out) { perror("trace"); return 1; }
  long steps = 0;
  int signal = 0;
  for (;;) {
    if (ptrace(PTRACE_SINGLESTEP, child, 0, signal) < 0) break;
    if (waitpid(child, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status)) break;
    signal = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, child, 0, &regs) < 0) break;
    steps++;
    if (regs.rip >= base && regs.rip < end) {
      uint64_t granule = (regs.rip - base) / 16;
      if (!seen[granule]) {
        seen[granule] = 1;
        fprintf(out, "%lx\n", (unsigned long)(regs.rip - base));
      }
    }
  }
  fclose(out);
  fprintf(stderr, "trace: %ld instructions, exit status %d\n", steps,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
