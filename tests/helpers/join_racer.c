/* tests/helpers/join_racer.c — the exec-join race of issue 10 item 2, run
 * inside a sandbox as its unprivileged user: loops over the next pids of the
 * sandbox's pid namespace (/proc/sys/kernel/ns_last_pid + 1..3) and opens
 * /proc/PID/{mountinfo,net/tcp,net/unix,cmdline,environ} of each process the
 * host adds, reads what it can and looks for the host-only markers listed
 * (one per line) in MARKERS.  It runs until STOP exists or SECS pass, then
 * writes to OUT:
 *   "opened N"            opens of another process's file that succeeded
 *   "pids N"              distinct pids whose files it opened
 *   "window N"            cmdline reads of a process not yet exec'd (the
 *                         joined process shows "agentnest-exec" until execve)
 *   "HIT FILE N (first pid P) MARKER"
 *                         N reads of FILE showed MARKER (host state)
 * Static (no libc of the image needed).  Usage:
 *   join_racer MARKERS OUT STOP SECS */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_MARKERS 16
#define BUF_SZ (256 * 1024)

static char buf[BUF_SZ];

static int read_small(const char *path, char *out, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, out, len - 1);
  close(fd);
  if (n < 0) return -1;
  out[n] = '\0';
  return (int) n;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: join_racer MARKERS OUT STOP SECS\n");
    return 2;
  }
  /* the markers file appears once the host has made its markers */
  static char mbuf[8192];
  int ml = -1;
  for (int i = 0; i < 6000 && (ml = read_small(argv[1], mbuf, sizeof mbuf)) < 0; i++)
    usleep(10000);
  if (ml < 0) {
    fprintf(stderr, "join_racer: no markers file %s\n", argv[1]);
    return 2;
  }
  char *markers[MAX_MARKERS];
  int nm = 0;
  for (char *save = NULL, *m = strtok_r(mbuf, "\n", &save); m && nm < MAX_MARKERS;
       m = strtok_r(NULL, "\n", &save))
    if (*m) markers[nm++] = m;

  static const char *files[] = {"mountinfo", "net/tcp", "net/unix", "cmdline", "environ"};
  static const size_t nfiles = sizeof files / sizeof *files;
  unsigned long count[5][MAX_MARKERS] = {{0}};
  int first[5][MAX_MARKERS] = {{0}};
  unsigned long opened = 0, pids = 0, window = 0;
  int last_seen = 0, self = getpid();
  time_t end = time(NULL) + atol(argv[4]);
  for (unsigned long loop = 0;; loop++) {
    if ((loop & 1023) == 0 && (access(argv[3], F_OK) == 0 || time(NULL) >= end)) break;
    char lp[32];
    if (read_small("/proc/sys/kernel/ns_last_pid", lp, sizeof lp) < 0) continue;
    int last = atoi(lp);
    for (int pid = last + 1; pid <= last + 3; pid++) {
      if (pid == self) continue;
      for (size_t f = 0; f < nfiles; f++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/%s", pid, files[f]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        opened++;
        if (pid != last_seen) {
          pids++;
          last_seen = pid;
        }
        size_t got = 0;
        ssize_t n;
        while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
          got += (size_t) n;
        close(fd);
        if (f == 3 && got >= 14 && !memcmp(buf, "agentnest-exec", 14)) window++;
        for (int i = 0; i < nm; i++) {
          if (!memmem(buf, got, markers[i], strlen(markers[i]))) continue;
          if (!count[f][i]++) first[f][i] = pid;
        }
      }
    }
  }
  FILE *o = fopen(argv[2], "we");
  if (!o) return 2;
  fprintf(o, "opened %lu\npids %lu\nwindow %lu\n", opened, pids, window);
  for (size_t f = 0; f < nfiles; f++)
    for (int i = 0; i < nm; i++)
      if (count[f][i])
        fprintf(o, "HIT %s %lu (first pid %d) %s\n", files[f], count[f][i], first[f][i], markers[i]);
  return fclose(o) == 0 ? 0 : 2;
}
