/* sandbox/events.c — the sandbox's event log, <dir>/events.jsonl: one JSON
 * object per line, appended with O_APPEND in one write(2) (atomic for lines
 * under PIPE_BUF-ish sizes on local filesystems), replayed and followed by
 * an_sandbox_events.  What does NOT live here: deciding when events happen
 * (sandbox.c, exec.c, monitor.c, teardown.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/utc.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

void an_sb_event(const char *dir, const char *type, const char *fields_fmt, ...) {
  char fields[1024] = "";
  if (fields_fmt) {
    va_list ap;
    va_start(ap, fields_fmt);
    vsnprintf(fields, sizeof fields, fields_fmt, ap);
    va_end(ap);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char t[24];
  an_utc_format(ts.tv_sec, t, sizeof t);
  char line[1400];
  int n = snprintf(line, sizeof line, "{\"time\":\"%.19s.%03ldZ\",\"type\":\"%s\"%s}\n", t,
                   ts.tv_nsec / 1000000, type, fields);
  if (n <= 0 || (size_t) n >= sizeof line) return;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_EVENTS_FILE);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t) n) < 0) {}
  close(fd);
}

/* Deliver complete lines in buf[0..*len); keep a partial tail. */
static int deliver(char *buf, size_t *len, an_sandbox_event_fn fn, void *data, bool *destroyed) {
  size_t start = 0;
  for (size_t i = 0; i < *len; i++) {
    if (buf[i] != '\n') continue;
    buf[i] = '\0';
    if (strstr(buf + start, "\"type\":\"destroyed\"")) *destroyed = true;
    int r = fn(data, buf + start);
    start = i + 1;
    if (r) {
      *len = 0;
      return r;
    }
  }
  memmove(buf, buf + start, *len - start);
  *len -= start;
  return 0;
}

int an_sandbox_events(const char *store_root, const char *id_or_name, bool follow,
                      an_sandbox_event_fn fn, void *data, an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  char id[AN_SANDBOX_ID_LEN + 1];
  int r = an_sb_resolve(root, id_or_name, id, err);
  if (r < 0) return r;
  if (r == 1) return an_error_set(err, ETIME, "sandbox %s expired", id);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s/%s/%s", root, AN_SB_DIR, id, AN_SB_EVENTS_FILE);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return an_error_set(err, errno, "sandbox %s: events %s", id, path);
  char buf[8192];
  size_t len = 0;
  bool destroyed = false;
  for (;;) {
    ssize_t n = read(fd, buf + len, sizeof buf - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "read %s", path);
    }
    if (n > 0) {
      len += (size_t) n;
      if ((r = deliver(buf, &len, fn, data, &destroyed))) return r;
      if (len == sizeof buf) len = 0;   /* an absurd line: drop it */
      continue;
    }
    /* EOF */
    if (!follow || destroyed) return 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_nlink == 0) return 0;   /* state removed */
    poll(NULL, 0, 100);
  }
}
