/* sandbox/audit_read.c — reading the per-store audit log across its rotated
 * files, with the filters of `agentnest audit` (agentnest/audit.h), and the
 * --since parser.  What does NOT live here: writing (audit.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/audit.h"
#include "agentnest/image.h"
#include "sandbox/audit_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"
#include "util/units.h"
#include "util/utc.h"

/* "YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]" or "YYYY-MM-DD" -> ms.  False when
 * the text is neither. */
static bool parse_rfc3339(const char *s, uint64_t *ms) {
  int y, mo, d, h = 0, mi = 0, sec = 0, used = 0;
  if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 || used != 10) return false;
  const char *p = s + used;
  unsigned frac = 0;
  if (*p == 'T' || *p == 't' || *p == ' ') {
    int u2 = 0;
    if (sscanf(p + 1, "%2d:%2d:%2d%n", &h, &mi, &sec, &u2) != 3 || u2 != 8) return false;
    p += 1 + u2;
    if (*p == '.') {
      p++;
      unsigned digits = 0;
      while (*p >= '0' && *p <= '9') {
        if (digits < 3) frac = frac * 10 + (unsigned) (*p - '0');
        digits++;
        p++;
      }
      if (!digits) return false;
      for (; digits < 3; digits++) frac *= 10;
    }
    if (*p == 'Z' || *p == 'z') p++;
    else if (!strcmp(p, "+00:00")) p += 6;
  }
  if (*p) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970) return false;
  /* not timegm(3): it takes glibc's tzset_lock, which an API worker forked
   * while a serve thread held it would wait for for ever (util/utc.h) */
  struct an_utc u = {.year = y, .mon = mo, .mday = d, .hour = h, .min = mi, .sec = sec};
  int64_t t = an_utc_to_epoch(&u);
  if (t < 0) return false;
  *ms = (uint64_t) t * 1000 + frac;
  return true;
}

int an_audit_parse_since(const char *text, uint64_t now_ms, uint64_t *ms, an_error_t *err) {
  if (!text || !*text) return an_error_set(err, EINVAL, "since: empty time");
  if (parse_rfc3339(text, ms)) return 0;
  uint64_t d = 0;
  an_error_t e = NULL;
  if (an_parse_duration_ms(text, &d, &e) == 0) {
    *ms = d > now_ms ? 0 : now_ms - d;
    return 0;
  }
  an_error_free(&e);
  return an_error_set(err, EINVAL,
                      "since \"%s\": expected an RFC 3339 UTC time (2026-12-01T12:00:00Z), a date "
                      "(2026-12-01) or a duration before now (10m, 1h)", text);
}

static bool str_member_is(yajl_val v, const char *key, const char *want) {
  const char *s = an_json_member_str(v, key);
  return s && !strcmp(s, want);
}

static bool passes(const char *line, size_t len, const struct an_audit_filter *f) {
  yajl_val v = NULL;
  an_error_t e = NULL;
  if (an_json_parse(line, len, "", &v, &e) < 0) {
    an_error_free(&e);
    return false;
  }
  bool ok = YAJL_IS_OBJECT(v);
  if (ok && f && f->op) ok = str_member_is(v, "op", f->op);
  if (ok && f && f->sandbox)
    ok = str_member_is(v, "sandbox", f->sandbox) || str_member_is(v, "child", f->sandbox) ||
         str_member_is(v, "parent", f->sandbox);
  if (ok && f && f->since_ms) {
    const char *t = an_json_member_str(v, "time");
    uint64_t ms = 0;
    ok = t && parse_rfc3339(t, &ms) && ms >= f->since_ms;
  }
  yajl_tree_free(v);
  return ok;
}

/* Deliver the lines of one file.  Lines longer than AN_AUDIT_RECORD_MAX
 * (none written by us) are skipped. */
static int read_file(int fd, const char *name, const struct an_audit_filter *f, an_audit_fn fn,
                     void *data, an_error_t *err) {
  size_t cap = AN_AUDIT_RECORD_MAX + 2, len = 0;
  cleanup_free char *buf = malloc(cap + 1);
  if (!buf) return an_error_set(err, ENOMEM, "audit log: read %s", name);
  bool skipping = false;
  for (;;) {
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "audit log: read %s", name);
    }
    if (n == 0) break;
    len += (size_t) n;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
      if (buf[i] != '\n') continue;
      buf[i] = '\0';
      if (!skipping && i > start && passes(buf + start, i - start, f)) {
        int r = fn(data, buf + start);
        if (r) return r;
      }
      skipping = false;
      start = i + 1;
    }
    memmove(buf, buf + start, len - start);
    len -= start;
    if (len == cap) {   /* an absurd line: drop it up to its newline */
      len = 0;
      skipping = true;
    }
  }
  return 0;
}

int an_audit_read(const char *store_root, const struct an_audit_filter *f, an_audit_fn fn,
                  void *data, an_error_t *err) {
  const char *root = store_root && *store_root ? store_root : AN_IMAGE_DEFAULT_STORE;
  an_error_t e = NULL;
  cleanup_close int dfd = an_audit_open_dir(root, false, &e);
  if (dfd == -ENOENT) { an_error_free(&e); return 0; }
  if (dfd < 0) { *err = e; return dfd; }
  int fds[AN_AUDIT_MAX_KEEP + 1];
  size_t nfd = 0;
  int r = 0;
  {
    /* open every file under the shared lock: a rotation cannot run
     * between two opens, so nothing is missed or seen twice */
    cleanup_close int lock = an_audit_lock(dfd, root, LOCK_SH, err);
    if (lock < 0) return lock;
    for (unsigned i = AN_AUDIT_MAX_KEEP; i >= 1 && r >= 0; i--) {
      char name[64];
      snprintf(name, sizeof name, AN_AUDIT_FILE ".%u", i);
      int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd >= 0) fds[nfd++] = fd;
      else if (errno != ENOENT) r = an_error_set(err, errno, "audit log: open %s/" AN_AUDIT_DIR "/%s", root, name);
    }
    int fd = openat(dfd, AN_AUDIT_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) fds[nfd++] = fd;
    else if (errno != ENOENT && r >= 0)
      r = an_error_set(err, errno, "audit log: open %s/" AN_AUDIT_DIR "/" AN_AUDIT_FILE, root);
  }
  for (size_t i = 0; i < nfd; i++) {
    if (r == 0) r = read_file(fds[i], AN_AUDIT_FILE, f, fn, data, err);
    close(fds[i]);
  }
  return r;
}
