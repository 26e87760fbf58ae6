/* sandbox/audit.c — appending to the per-store audit log (agentnest/audit.h):
 * the record writer (util/json_gen, secrets through the output redactor),
 * the flock-serialised append with size rotation and fsync, and the
 * rotation config.  What does NOT live here: reading the log
 * (audit_read.c), deciding what to record (the operations themselves). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "util/utc.h"
#include "agentnest/audit.h"
#include "agentnest/image.h"
#include "agentnest/output.h"
#include "sandbox/audit_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

#define AUDIT_LOCK "audit.lock"
#define AUDIT_CONFIG "config.json"

/* ---- the record ---------------------------------------------------------------------------- */

struct grow {
  char *buf;
  size_t len, cap;
};

static int grow_sink(void *data, const char *buf, size_t len) {
  struct grow *g = data;
  if (g->len + len + 1 > g->cap) {
    size_t ncap = (g->len + len + 1) * 2;
    char *nb = realloc(g->buf, ncap);
    if (!nb) return -ENOMEM;
    g->buf = nb;
    g->cap = ncap;
  }
  memcpy(g->buf + g->len, buf, len);
  g->len += len;
  g->buf[g->len] = '\0';
  return 0;
}

/* A string member value: redacted, cut at `cut` bytes (0: no cut),
 * non-UTF-8 bytes as U+FFFD. */
static int gen_string(struct an_jgen *j, const char *s, const struct an_secret *sec, size_t nsec,
                      size_t cut, bool *cut_done, an_error_t *err) {
  if (!s) {
    an_jgen_null(j);
    return 0;
  }
  struct grow g = {0};
  const char *out = s;
  size_t len = strlen(s);
  if (nsec) {
    an_redactor_t *r = NULL;
    int rr = an_redactor_new(sec, nsec, &r, err);
    if (rr < 0) return rr;
    rr = an_redactor_feed(r, s, len, grow_sink, &g);
    if (rr >= 0) rr = an_redactor_flush(r, grow_sink, &g);
    an_redactor_free(r);
    if (rr < 0) {
      free(g.buf);
      return an_error_set(err, -rr, "audit record: redact");
    }
    out = g.buf ? g.buf : "";
    len = g.len;
  }
  if (cut && len > cut) {
    len = cut;
    *cut_done = true;
  }
  if (j->g) an_jgen_check(j, an_json_escape_output(j->g, out, len));
  free(g.buf);
  return 0;
}

static bool reserved_key(const char *k) {
  return !strcmp(k, "time") || !strcmp(k, "op") || !strcmp(k, "sandbox") || !strcmp(k, "caller");
}

static int fields_gen(struct an_jgen *j, const struct an_audit_field *f, size_t n, size_t cut,
                      bool *cut_done, an_error_t *err) {
  const struct an_secret *sec = NULL;
  size_t nsec = 0;
  for (size_t i = 0; i < n; i++)
    if (f[i].type == AN_AUDIT_T_SECRETS && f[i].secrets && f[i].num > 0) {
      sec = f[i].secrets;
      nsec = (size_t) f[i].num;
    }
  for (size_t i = 0; i < n; i++) {
    if (f[i].type == AN_AUDIT_T_SECRETS) continue;
    if (f[i].type == AN_AUDIT_T_END) break;
    if (!f[i].key || !*f[i].key) return an_error_set(err, EINVAL, "audit record: a field without a key");
    an_jgen_key(j, f[i].key);
    int r = 0;
    switch (f[i].type) {
    case AN_AUDIT_T_STR:
      r = gen_string(j, f[i].str, sec, nsec, cut, cut_done, err);
      break;
    case AN_AUDIT_T_INT:
      an_jgen_i64(j, f[i].num);
      break;
    case AN_AUDIT_T_BOOL:
      an_jgen_bool(j, f[i].num != 0);
      break;
    case AN_AUDIT_T_STRV:
    case AN_AUDIT_T_ENV_NAMES:
      an_jgen_array_open(j);
      for (char *const *v = f[i].strv; v && *v && r >= 0; v++) {
        if (f[i].type == AN_AUDIT_T_ENV_NAMES) {
          const char *eq = strchr(*v, '=');
          cleanup_free char *name = strndup(*v, eq ? (size_t) (eq - *v) : strlen(*v));
          if (!name) return an_error_set(err, ENOMEM, "audit record");
          r = gen_string(j, name, sec, nsec, cut, cut_done, err);
        } else {
          r = gen_string(j, *v, sec, nsec, cut, cut_done, err);
        }
      }
      an_jgen_array_close(j);
      break;
    default:
      return an_error_set(err, EINVAL, "audit record: field \"%s\": unknown type %d", f[i].key,
                          (int) f[i].type);
    }
    if (r < 0) return r;
  }
  return 0;
}

int an_audit_fields_gen(struct an_jgen *j, const struct an_audit_field *fields, size_t n,
                        an_error_t *err) {
  bool cut = false;
  return fields_gen(j, fields, n, 0, &cut, err);
}

void an_audit_time(uint64_t ms, char buf[32]) {
  char s[24];
  an_utc_format((int64_t) (ms / 1000), s, sizeof s);
  snprintf(buf, 32, "%.19s.%03dZ", s, (int) (ms % 1000));
}

static uint64_t realtime_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static bool valid_op(const char *op) {
  size_t n = op ? strlen(op) : 0;
  if (n == 0 || n > 32) return false;
  for (const char *p = op; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || *p == '_')) return false;
  return true;
}

/* The record as one line (with its newline): *line heap. */
static int make_line(const char *op, const char *id, const struct an_audit_field *f, size_t n,
                     size_t cut, char **line, size_t *len, bool *cut_done, an_error_t *err) {
  for (size_t i = 0; i < n; i++)
    if (f[i].type != AN_AUDIT_T_SECRETS && f[i].type != AN_AUDIT_T_END && f[i].key &&
        reserved_key(f[i].key))
      return an_error_set(err, EINVAL, "audit record: field key \"%s\" is reserved", f[i].key);
  cleanup_jgen struct an_jgen j = {0};
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "audit record");
  char t[32];
  an_audit_time(realtime_ms(), t);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "time", t);
  an_jgen_kv_str(&j, "op", op);
  an_jgen_kv_str(&j, "sandbox", id);
  an_jgen_key(&j, "caller");
  an_jgen_map_open(&j);
  an_jgen_kv_u64(&j, "uid", (uint64_t) getuid());
  an_jgen_kv_i64(&j, "pid", (int64_t) getpid());
  an_jgen_map_close(&j);
  int r = fields_gen(&j, f, n, cut, cut_done, err);
  if (r < 0) return r;
  if (*cut_done) an_jgen_kv_bool(&j, "truncated", true);
  an_jgen_map_close(&j);
  char *doc = NULL;
  size_t dlen = 0;
  if ((r = an_jgen_finish(&j, &doc, &dlen)) < 0) return an_error_set(err, -r, "audit record %s: JSON", op);
  char *nl = realloc(doc, dlen + 2);
  if (!nl) { free(doc); return an_error_set(err, ENOMEM, "audit record"); }
  nl[dlen] = '\n';
  nl[dlen + 1] = '\0';
  *line = nl;
  *len = dlen + 1;
  return 0;
}

/* ---- the directory, config, lock -------------------------------------------------------- */

int an_audit_open_dir(const char *root, bool create, an_error_t *err) {
  cleanup_close int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0) return an_error_set(err, errno, "audit log: open store %s", root);
  if (create && mkdirat(rfd, AN_AUDIT_DIR, 0700) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "audit log: mkdir %s/" AN_AUDIT_DIR, root);
  int dfd = openat(rfd, AN_AUDIT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) {
    int e = errno == ENOTDIR ? ELOOP : errno;
    return an_error_set(err, e, "audit log: open %s/" AN_AUDIT_DIR, root);
  }
  return dfd;
}

int an_audit_lock(int dfd, const char *root, int how, an_error_t *err) {
  int fd = openat(dfd, AUDIT_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return an_error_set(err, errno, "audit log: open %s/" AN_AUDIT_DIR "/" AUDIT_LOCK, root);
  while (flock(fd, how) < 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    return an_error_set(err, e, "audit log: lock %s/" AN_AUDIT_DIR "/" AUDIT_LOCK, root);
  }
  return fd;
}

static int read_config(int dfd, const char *root, uint64_t *max_bytes, unsigned *keep, an_error_t *err) {
  *max_bytes = AN_AUDIT_DEFAULT_MAX_BYTES;
  *keep = AN_AUDIT_DEFAULT_KEEP;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  an_error_t e = NULL;
  int r = an_read_file_at(dfd, AUDIT_CONFIG, 0, 4096, &buf, &len, &e);
  if (r == -ENOENT) { an_error_free(&e); return 0; }
  if (r < 0) { *err = e; return an_error_prefix(err, "audit log config in %s", root); }
  yajl_val v = NULL;
  if ((r = an_json_parse(buf, len, AUDIT_CONFIG, &v, err)) < 0) return r;
  uint64_t mb = *max_bytes, k = *keep;
  yajl_val m = an_json_member(v, "max_bytes"), kk = an_json_member(v, "keep");
  if ((m && an_json_get_u64(m, "max_bytes", AN_AUDIT_MAX_MAX_BYTES, &mb, err) < 0) ||
      (kk && an_json_get_u64(kk, "keep", AN_AUDIT_MAX_KEEP, &k, err) < 0)) {
    yajl_tree_free(v);
    return an_error_prefix(err, "audit log config %s/" AN_AUDIT_DIR "/" AUDIT_CONFIG, root);
  }
  yajl_tree_free(v);
  if (mb < AN_AUDIT_MIN_MAX_BYTES) mb = AN_AUDIT_MIN_MAX_BYTES;
  if (k < 1) k = 1;
  *max_bytes = mb;
  *keep = (unsigned) k;
  return 0;
}

int an_audit_config(const char *store_root, uint64_t *max_bytes, unsigned *keep, an_error_t *err) {
  const char *root = store_root && *store_root ? store_root : AN_IMAGE_DEFAULT_STORE;
  an_error_t e = NULL;
  cleanup_close int dfd = an_audit_open_dir(root, false, &e);
  if (dfd < 0) {
    an_error_free(&e);
    *max_bytes = AN_AUDIT_DEFAULT_MAX_BYTES;
    *keep = AN_AUDIT_DEFAULT_KEEP;
    return 0;
  }
  return read_config(dfd, root, max_bytes, keep, err);
}

int an_audit_configure(const char *store_root, uint64_t max_bytes, unsigned keep, an_error_t *err) {
  const char *root = store_root && *store_root ? store_root : AN_IMAGE_DEFAULT_STORE;
  if (max_bytes < AN_AUDIT_MIN_MAX_BYTES || max_bytes > AN_AUDIT_MAX_MAX_BYTES)
    return an_error_set(err, EINVAL, "audit max size %llu: must be %llu .. %llu bytes",
                        (unsigned long long) max_bytes, AN_AUDIT_MIN_MAX_BYTES, AN_AUDIT_MAX_MAX_BYTES);
  if (keep < 1 || keep > AN_AUDIT_MAX_KEEP)
    return an_error_set(err, EINVAL, "audit keep %u: must be 1 .. %u", keep, AN_AUDIT_MAX_KEEP);
  cleanup_close int dfd = an_audit_open_dir(root, true, err);
  if (dfd < 0) return dfd;
  cleanup_close int lock = an_audit_lock(dfd, root, LOCK_EX, err);
  if (lock < 0) return lock;
  cleanup_jgen struct an_jgen j = {0};
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "audit config");
  an_jgen_map_open(&j);
  an_jgen_kv_u64(&j, "max_bytes", max_bytes);
  an_jgen_kv_u64(&j, "keep", keep);
  an_jgen_map_close(&j);
  int r = an_jgen_write_file_at(&j, dfd, AUDIT_CONFIG, true, err);
  if (r == 0 && fchmodat(dfd, AUDIT_CONFIG, 0600, 0) < 0)
    r = an_error_set(err, errno, "chmod %s/" AN_AUDIT_DIR "/" AUDIT_CONFIG, root);
  return r;
}

/* ---- append ---------------------------------------------------------------------------- */

static int open_current(int dfd, const char *root, an_error_t *err) {
  int fd = openat(dfd, AN_AUDIT_FILE, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return an_error_set(err, errno, "audit log: open %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return an_error_set(err, EINVAL, "audit log %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE ": not a regular file",
                        root);
  }
  /* a umask, or a file made by hand, must not leave it readable by others */
  if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0) {
    int e = errno;
    close(fd);
    return an_error_set(err, e, "audit log: chmod %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  }
  return fd;
}

/* audit.jsonl.(keep) removed, .N -> .N+1, audit.jsonl -> .1 (lock held). */
static int rotate(int dfd, const char *root, unsigned keep, an_error_t *err) {
  char from[64], to[64];
  snprintf(to, sizeof to, AN_AUDIT_FILE ".%u", keep);
  if (unlinkat(dfd, to, 0) < 0 && errno != ENOENT)
    return an_error_set(err, errno, "audit log: remove %s/" AN_AUDIT_DIR "/%s", root, to);
  for (unsigned i = keep; i > 1; i--) {
    snprintf(from, sizeof from, AN_AUDIT_FILE ".%u", i - 1);
    snprintf(to, sizeof to, AN_AUDIT_FILE ".%u", i);
    if (renameat(dfd, from, dfd, to) < 0 && errno != ENOENT)
      return an_error_set(err, errno, "audit log: rotate %s to %s in %s/" AN_AUDIT_DIR, from, to, root);
  }
  if (renameat(dfd, AN_AUDIT_FILE, dfd, AN_AUDIT_FILE ".1") < 0)
    return an_error_set(err, errno, "audit log: rotate %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  if (fsync(dfd) < 0) return an_error_set(err, errno, "audit log: fsync %s/" AN_AUDIT_DIR, root);
  return 0;
}

static int append_line(const char *root, const char *line, size_t len, an_error_t *err) {
  cleanup_close int dfd = an_audit_open_dir(root, true, err);
  if (dfd < 0) return dfd;
  cleanup_close int lock = an_audit_lock(dfd, root, LOCK_EX, err);
  if (lock < 0) return lock;
  uint64_t max_bytes;
  unsigned keep;
  an_error_t e = NULL;
  if (read_config(dfd, root, &max_bytes, &keep, &e) < 0) {
    /* a broken config must not stop the log: the defaults apply */
    an_error_free(&e);
    max_bytes = AN_AUDIT_DEFAULT_MAX_BYTES;
    keep = AN_AUDIT_DEFAULT_KEEP;
  }
  cleanup_close int fd = open_current(dfd, root, err);
  if (fd < 0) return fd;
  struct stat st;
  if (fstat(fd, &st) < 0) return an_error_set(err, errno, "audit log: stat");
  if (st.st_size > 0 && (uint64_t) st.st_size + len > max_bytes) {
    int r = rotate(dfd, root, keep, err);
    if (r < 0) return r;
    close(fd);
    fd = open_current(dfd, root, err);
    if (fd < 0) return fd;
  }
  /* one write(2): with O_APPEND the line lands whole at the end */
  ssize_t w;
  while ((w = write(fd, line, len)) < 0 && errno == EINTR) {}
  if (w < 0) return an_error_set(err, errno, "audit log: write %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  if ((size_t) w != len) {
    /* disk full mid-line: end the line so that the next record stays whole */
    if (write(fd, "\n", 1) < 0) {}
    return an_error_set(err, ENOSPC, "audit log: short write to %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  }
  if (fsync(fd) < 0) return an_error_set(err, errno, "audit log: fsync %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  return 0;
}

int an_audit_recordv(const char *store_root, const char *op, const char *sandbox_id,
                     const struct an_audit_field *fields, size_t n, an_error_t *err) {
  const char *root = store_root && *store_root ? store_root : AN_IMAGE_DEFAULT_STORE;
  if (!valid_op(op)) return an_error_set(err, EINVAL, "audit record: op \"%s\" must match [a-z_]{1,32}", op ? op : "");
  cleanup_free char *line = NULL;
  size_t len = 0;
  bool cut = false;
  int r = make_line(op, sandbox_id, fields, n, 0, &line, &len, &cut, err);
  if (r < 0) return r;
  if (len > AN_AUDIT_RECORD_MAX) {
    free(line);
    line = NULL;
    if ((r = make_line(op, sandbox_id, fields, n, AN_AUDIT_STR_CUT, &line, &len, &cut, err)) < 0) return r;
  }
  return append_line(root, line, len, err);
}

bool an_sb_audit_fields_va(va_list ap, struct an_audit_field f[AN_AUDIT_MAX_FIELDS], size_t *n) {
  *n = 0;
  for (;;) {
    struct an_audit_field x = va_arg(ap, struct an_audit_field);
    if (x.type == AN_AUDIT_T_END) return false;
    if (*n == AN_AUDIT_MAX_FIELDS) return true;
    f[(*n)++] = x;
  }
}

int an_audit_record(const char *store_root, const char *op, const char *sandbox_id, an_error_t *err,
                    ...) {
  struct an_audit_field f[AN_AUDIT_MAX_FIELDS];
  size_t n = 0;
  va_list ap;
  va_start(ap, err);
  bool over = an_sb_audit_fields_va(ap, f, &n);
  va_end(ap);
  if (over)
    return an_error_set(err, EINVAL, "audit record %s: more than %d fields", op ? op : "", AN_AUDIT_MAX_FIELDS);
  return an_audit_recordv(store_root, op, sandbox_id, f, n, err);
}
