/* tests/lib/util.c — see util.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/sandbox.h"
#include "rm_tree.h"
#include "util.h"
#include "ctx_fixture.h"

void an_test_mkdirs(const char *path) {
  char *buf = strdup(path);
  cr_assert_not_null(buf);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    cr_assert(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", buf, strerror(errno));
    if (!c) break;
    *p = c;
  }
  free(buf);
}

/* O_NOFOLLOW: never write through a symlink planted at `path`. */
static int create(const char *path, int flags, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | flags | O_NOFOLLOW | O_CLOEXEC, mode);
  cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
  cr_assert(fchmod(fd, mode) == 0, "chmod %s: %s", path, strerror(errno));
  return fd;
}

void an_test_write_file(const char *path, const void *buf, size_t len, mode_t mode) {
  int fd = create(path, O_TRUNC, mode);
  for (size_t off = 0; off < len;) {
    ssize_t n = write(fd, (const char *) buf + off, len - off);
    cr_assert(n > 0, "write %s: %s", path, strerror(errno));
    off += (size_t) n;
  }
  cr_assert(close(fd) == 0, "close %s: %s", path, strerror(errno));
}

void an_test_copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  cr_assert(in >= 0, "open %s: %s", from, strerror(errno));
  struct stat st;
  cr_assert(fstat(in, &st) == 0, "stat %s: %s", from, strerror(errno));
  int out = create(to, O_EXCL, mode);
  off_t off = 0;
  while (off < st.st_size) {
    ssize_t n = sendfile(out, in, &off, (size_t) (st.st_size - off));
    cr_assert(n > 0, "copy %s to %s: %s", from, to, strerror(errno));
  }
  close(in);
  cr_assert(close(out) == 0, "close %s: %s", to, strerror(errno));
}

char *an_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  char *buf = NULL;
  size_t n = 0;
  FILE *mem = open_memstream(&buf, &n);
  char chunk[4096];
  size_t k;
  while (mem && (k = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, k, mem);
  int bad = ferror(f) || !mem;
  fclose(f);
  if (mem) fclose(mem);
  if (bad) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  if (len) *len = n;
  return buf;
}

int an_test_sh(const char *fmt, ...) {
  char *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert(vasprintf(&cmd, fmt, ap) >= 0);
  va_end(ap);
  int st = system(cmd);
  cr_assert(st != -1, "run %s: %s", cmd, strerror(errno));
  free(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void an_test_sweep_stale(const char *prefix, void (*each)(const char *dir)) {
  DIR *d = opendir("/tmp");
  struct dirent *de;
  size_t pl = strlen(prefix);
  while (d && (de = readdir(d))) {
    if (strncmp(de->d_name, prefix, pl)) continue;
    char *end = NULL;
    long pid = strtol(de->d_name + pl, &end, 10);
    if (end == de->d_name + pl || *end != '-' || pid <= 1) continue;
    if (kill((pid_t) pid, 0) == 0 || errno != ESRCH) continue;   /* alive (or not ours to judge) */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "/tmp/%s", de->d_name);
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (each) each(path);
    an_test_rm_tree(path);
  }
  if (d) closedir(d);
}

void an_test_store_remove(const char *root) {
  if (access(root, F_OK) != 0) return;
  /* a destroy returns before its reaper is done; removing the store under
   * a reaper would race its last writes (the audit record) */
  an_test_wait_reaped(root);
  char *report = NULL;
  an_error_t err = NULL;
  an_sandbox_prune_ctx(an_test_ctx(), root, true, &report, &err);
  free(report);
  an_error_free(&err);
  an_test_rm_tree(root);
  char lock[PATH_MAX];
  snprintf(lock, sizeof lock, "%s.lock", root);
  unlink(lock);
}

static bool reaping_left(const char *root) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/sandbox-reaping", root);
  DIR *d = opendir(p);
  bool left = false;
  struct dirent *de;
  while (d && (de = readdir(d))) left |= de->d_name[0] != '.';
  if (d) closedir(d);
  if (left) return true;
  d = opendir("/proc");
  while (d && (de = readdir(d)) && !left) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char cp[300];
    snprintf(cp, sizeof cp, "/proc/%s/comm", de->d_name);
    char *comm = an_test_read_file(cp, NULL);
    if (comm && !strcmp(comm, "agentnest-reap\n")) {
      size_t len = 0;
      snprintf(cp, sizeof cp, "/proc/%s/cmdline", de->d_name);
      char *cmd = an_test_read_file(cp, &len);
      for (size_t k = 0; cmd && k < len; k += strlen(cmd + k) + 1) left |= !strcmp(cmd + k, root);
      free(cmd);
    }
    free(comm);
  }
  if (d) closedir(d);
  return left;
}

bool an_test_wait_reaped(const char *root) {
  for (int i = 0; i < 600; i++) {
    if (!reaping_left(root)) return true;
    usleep(100000);
  }
  return !reaping_left(root);
}

pid_t *an_test_idle_children(size_t n) {
  pid_t *pids = calloc(n ? n : 1, sizeof *pids);
  cr_assert_not_null(pids);
  for (size_t i = 0; i < n; i++) {
    pids[i] = fork();
    cr_assert_geq(pids[i], 0, "fork: %s", strerror(errno));
    if (pids[i] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (;;) pause();
    }
  }
  return pids;
}

void an_test_idle_end(pid_t *pids, size_t n) {
  for (size_t i = 0; i < n; i++) kill(pids[i], SIGKILL);
  for (size_t i = 0; i < n; i++) waitpid(pids[i], NULL, 0);
  free(pids);
}
