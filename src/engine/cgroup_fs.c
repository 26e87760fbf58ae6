/* engine/cgroup_fs.c — reading and writing cgroup interface files and
 * walking / removing cgroup directories.  Knows nothing of controllers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int an_cg_write(const char *dir, const char *file, const char *value, an_error_t *err) {
  cleanup_free char *p = NULL;
  if (asprintf(&p, "%s/%s", dir, file) < 0) return an_error_set(err, ENOMEM, "cgroup path");
  cleanup_close int fd = open(p, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s", p);
  size_t len = strlen(value);
  ssize_t w = write(fd, value, len);
  if (w < 0) return an_error_set(err, errno, "write \"%s\" to %s", value, p);
  if ((size_t) w != len) return an_error_set(err, EIO, "short write \"%s\" to %s", value, p);
  return 0;
}

int an_cg_writef(an_error_t *err, const char *dir, const char *file, const char *fmt, ...) {
  cleanup_free char *v = NULL;
  va_list ap;
  va_start(ap, fmt);
  int r = vasprintf(&v, fmt, ap);
  va_end(ap);
  if (r < 0) return an_error_set(err, ENOMEM, "format value for %s/%s", dir, file);
  return an_cg_write(dir, file, v, err);
}

int an_cg_read(const char *dir, const char *file, char **out, an_error_t *err) {
  cleanup_free char *p = NULL;
  if (asprintf(&p, "%s/%s", dir, file) < 0) return an_error_set(err, ENOMEM, "cgroup path");
  cleanup_close int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s", p);
  size_t cap = 4096, len = 0;
  cleanup_free char *buf = malloc(cap);
  if (!buf) return an_error_set(err, ENOMEM, "read %s", p);
  for (;;) {
    if (len + 1 >= cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) return an_error_set(err, ENOMEM, "read %s", p);
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "read %s", p);
    }
    if (r == 0) break;
    len += (size_t) r;
  }
  buf[len] = '\0';
  *out = an_steal(&buf);
  return 0;
}

int an_cg_read_key(const char *dir, const char *file, const char *key, uint64_t *val,
                   an_error_t *err) {
  cleanup_free char *s = NULL;
  int r = an_cg_read(dir, file, &s, err);
  if (r < 0) return r;
  size_t klen = strlen(key);
  for (char *line = s; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
      char *end = NULL;
      errno = 0;
      unsigned long long v = strtoull(line + klen + 1, &end, 10);
      if (errno || end == line + klen + 1)
        return an_error_set(err, EINVAL, "%s/%s: bad value for \"%s\"", dir, file, key);
      *val = v;
      return 0;
    }
    line = nl ? nl + 1 : NULL;
  }
  return an_error_set(err, ENOENT, "%s/%s: no key \"%s\"", dir, file, key);
}

bool an_cg_file_exists(const char *dir, const char *file) {
  cleanup_free char *p = NULL;
  if (asprintf(&p, "%s/%s", dir, file) < 0) return false;
  return access(p, F_OK) == 0;
}

int an_cg_wait_key(const char *dir, const char *file, const char *key, uint64_t want,
                   int timeout_ms, an_error_t *err) {
  long waited = 0, step = 1;
  for (;;) {
    uint64_t v = 0;
    an_error_t e = NULL;
    int r = an_cg_read_key(dir, file, key, &v, &e);
    if (r < 0) {
      if (err && !*err) *err = e; else an_error_free(&e);
      return r;
    }
    if (v == want) return 0;
    if (waited >= timeout_ms)
      return an_error_set(err, ETIMEDOUT, "%s/%s: \"%s\" is %" PRIu64 " after %d ms, want %" PRIu64,
                          dir, file, key, v, timeout_ms, want);
    sleep_ms(step);
    waited += step;
    if (step < 20) step *= 2;
  }
}

static int rmdir_retry(const char *p, an_error_t *err) {
  long waited = 0, step = 1;
  for (;;) {
    if (rmdir(p) == 0 || errno == ENOENT) return 0;
    if (errno != EBUSY || waited >= 2000) return an_error_set(err, errno, "rmdir %s", p);
    sleep_ms(step);
    waited += step;
    if (step < 20) step *= 2;
  }
}

int an_cg_walk(const char *dir, an_cg_visit_fn pre, an_cg_visit_fn post, void *arg,
               bool keep_going, an_error_t *err) {
  int ret = 0, r;
  if (pre && (r = pre(dir, arg, err)) < 0) return r;
  cleanup_closedir DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return 0;   /* removed meanwhile */
    return an_error_set(err, errno, "open cgroup %s", dir);
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    cleanup_free char *sub = NULL;
    if (asprintf(&sub, "%s/%s", dir, de->d_name) < 0) return an_error_set(err, ENOMEM, "path");
    an_error_t sub_err = NULL;
    r = an_cg_walk(sub, pre, post, arg, keep_going, &sub_err);
    if (r == -ENOENT) { an_error_free(&sub_err); continue; }   /* removed meanwhile */
    if (r < 0) {
      if (err && !*err) *err = sub_err; else an_error_free(&sub_err);
      if (!keep_going) return r;
      if (ret == 0) ret = r;
    }
  }
  if (post && (r = post(dir, arg, err)) < 0 && ret == 0) ret = r;
  return ret;
}

static int rmdir_visit(const char *dir, void *arg, an_error_t *err) {
  (void) arg;
  return rmdir_retry(dir, err);
}

int an_cg_rmdir_tree(const char *dir, an_error_t *err) {
  return an_cg_walk(dir, NULL, rmdir_visit, NULL, true, err);
}

static int append_pid(pid_t **pids, size_t *n, size_t *cap, pid_t p) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    pid_t *np = realloc(*pids, nc * sizeof *np);
    if (!np) return -ENOMEM;
    *pids = np;
    *cap = nc;
  }
  (*pids)[(*n)++] = p;
  return 0;
}

struct pid_list { pid_t **pids; size_t *n, *cap; };

static int procs_visit(const char *dir, void *arg, an_error_t *err) {
  struct pid_list *l = arg;
  cleanup_free char *procs = NULL;
  int r = an_cg_read(dir, "cgroup.procs", &procs, err);
  if (r < 0) return r;
  for (char *s = procs; *s;) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s) break;
    if (v > 0 && append_pid(l->pids, l->n, l->cap, (pid_t) v) < 0)
      return an_error_set(err, ENOMEM, "list pids of %s", dir);
    s = end;
    while (*s == '\n' || *s == ' ') s++;
  }
  return 0;
}

int an_cg_collect_pids(const char *dir, pid_t **pids, size_t *n, size_t *cap, an_error_t *err) {
  struct pid_list l = {pids, n, cap};
  return an_cg_walk(dir, procs_visit, NULL, &l, false, err);
}

bool an_cg_host_has_swap(void) {
  cleanup_fclose FILE *f = fopen("/proc/swaps", "re");
  if (!f) return false;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) n++;
  return n > 1;                 /* the first line is the header */
}
