/* sandbox/output.c — capture of an exec's stdout/stderr: concurrent
 * draining with poll(2), byte caps that never block the writer, UTF-8-safe
 * truncation, redaction through sandbox/redact.c, and JSON encoding of the
 * result with yajl (see agentnest/output.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/output.h"
#include "util/cleanup.h"

#define READ_CHUNK 65536
#define STOP_DRAIN_READS 16 /* x READ_CHUNK: more than a default pipe buffer (64 KiB) */

struct stream_buf {
  char *buf;
  size_t len, alloc;
  size_t cap;        /* per-stream cap (SIZE_MAX if none) */
  bool truncated;
  bool full;         /* cap reached: drop everything that follows */
  uint64_t read;
  enum an_stream id;
  struct an_output_capture *owner;
};

struct an_output_capture {
  struct stream_buf s[2];
  an_redactor_t *redactor;   /* one for both streams: finds secrets split between them */
  size_t total_cap;
  an_output_data_fn on_data;
  void *on_data_arg;
};

/* Length of the longest prefix of buf[0..len) that does not end inside a
 * UTF-8 sequence (RFC 3629 lead bytes: 110xxxxx 2, 1110xxxx 3, 11110xxx 4). */
static size_t utf8_boundary(const char *buf, size_t len) {
  size_t i = len, back = 0;
  while (i > 0 && back < 4 && ((unsigned char) buf[i - 1] & 0xC0) == 0x80) {
    i--;
    back++;
  }
  if (i == 0) return len;
  unsigned char lead = (unsigned char) buf[i - 1];
  size_t need = lead >= 0xF0 && lead <= 0xF7 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3
              : lead >= 0xC0 && lead <= 0xDF ? 2 : 1;
  size_t have = back + 1;
  return have < need ? i - 1 : len;
}

static void mark_full(struct stream_buf *sb) {
  sb->full = true;
  sb->truncated = true;
  sb->len = utf8_boundary(sb->buf, sb->len);
  if (sb->buf) sb->buf[sb->len] = '\0';
}

/* Redactor sink: keep what fits under both caps, drop the rest. */
static int store(void *data, const char *buf, size_t len) {
  struct stream_buf *sb = data;
  struct an_output_capture *c = sb->owner;
  if (sb->full) return 0;
  size_t used_total = c->s[0].len + c->s[1].len;
  size_t room = sb->cap - sb->len;
  if (c->total_cap - used_total < room) room = c->total_cap - used_total;
  size_t keep = len < room ? len : room;
  if (keep > 0) {
    if (sb->len + keep + 1 > sb->alloc) {
      size_t limit = sb->cap < c->total_cap ? sb->cap : c->total_cap;
      size_t want = sb->alloc ? sb->alloc * 2 : 65536;
      if (want < sb->len + keep + 1) want = sb->len + keep + 1;
      if (want > limit + 1) want = limit + 1;
      char *nb = realloc(sb->buf, want);
      if (!nb) return -ENOMEM;
      sb->buf = nb;
      sb->alloc = want;
    }
    memcpy(sb->buf + sb->len, buf, keep);
    size_t old = sb->len;
    sb->len += keep;
    sb->buf[sb->len] = '\0';
    if (keep < len) mark_full(sb);
    if (c->on_data && sb->len > old) c->on_data(c->on_data_arg, sb->id, sb->buf + old, sb->len - old);
  } else if (len > 0) {
    mark_full(sb);
  }
  return 0;
}

/* Redactor sink for both streams. */
static int store_stream(void *data, enum an_stream s, const char *buf, size_t len) {
  struct an_output_capture *c = data;
  return store(&c->s[s == AN_STREAM_STDERR], buf, len);
}

void an_output_capture_free(an_output_capture_t *c) {
  if (!c) return;
  for (int i = 0; i < 2; i++) free(c->s[i].buf);
  an_redactor_free(c->redactor);
  free(c);
}

static void capture_freep(an_output_capture_t **c) { an_output_capture_free(*c); }

int an_output_capture_new(const struct an_output_opts *opts, an_output_capture_t **out, an_error_t *err) {
  static const struct an_output_opts none;
  if (!opts) opts = &none;
  __attribute__((cleanup(capture_freep))) an_output_capture_t *c = calloc(1, sizeof *c);
  if (!c) return an_error_set(err, ENOMEM, "output capture");
  c->total_cap = opts->max_total ? opts->max_total : AN_OUTPUT_DEFAULT_MAX_BYTES;
  c->on_data = opts->on_data;
  c->on_data_arg = opts->on_data_arg;
  size_t caps[2] = {opts->max_stdout, opts->max_stderr};
  for (int i = 0; i < 2; i++) {
    struct stream_buf *sb = &c->s[i];
    sb->cap = caps[i] ? caps[i] : SIZE_MAX;
    sb->id = i == 0 ? AN_STREAM_STDOUT : AN_STREAM_STDERR;
    sb->owner = c;
  }
  int r = an_redactor_new(opts->secrets, opts->nsecrets, &c->redactor, err);
  if (r < 0) return an_error_prefix(err, "output capture");
  *out = an_steal(&c);
  return 0;
}

static struct stream_buf *stream_of(an_output_capture_t *c, enum an_stream s) {
  return s == AN_STREAM_STDOUT ? &c->s[0] : s == AN_STREAM_STDERR ? &c->s[1] : NULL;
}

int an_output_capture_feed(an_output_capture_t *c, enum an_stream stream, const char *buf, size_t len,
                           an_error_t *err) {
  struct stream_buf *sb = stream_of(c, stream);
  if (!sb) return an_error_set(err, EINVAL, "output capture: bad stream %d", (int) stream);
  sb->read += len;
  if (sb->full) return 0; /* drain and drop: no redaction work past the cap */
  int r = an_redactor_feed_stream(c->redactor, stream, buf, len, store_stream, c);
  return r < 0 ? an_error_set(err, -r, "output capture") : 0;
}

int an_output_capture_finish(an_output_capture_t *c, struct an_output *out, an_error_t *err) {
  memset(out, 0, sizeof *out);
  int r = an_redactor_flush_streams(c->redactor, store_stream, c);
  if (r < 0) return an_error_set(err, -r, "output capture");
  for (int i = 0; i < 2; i++) {
    struct stream_buf *sb = &c->s[i];
    if (!sb->buf) {
      sb->buf = calloc(1, 1);
      if (!sb->buf) return an_error_set(err, ENOMEM, "output capture");
    }
  }
  out->stdout_buf = an_steal(&c->s[0].buf);
  out->stdout_len = c->s[0].len;
  out->stdout_truncated = c->s[0].truncated;
  out->stdout_read = c->s[0].read;
  out->stderr_buf = an_steal(&c->s[1].buf);
  out->stderr_len = c->s[1].len;
  out->stderr_truncated = c->s[1].truncated;
  out->stderr_read = c->s[1].read;
  return 0;
}

void an_output_release(struct an_output *o) {
  if (!o) return;
  free(o->stdout_buf);
  free(o->stderr_buf);
  memset(o, 0, sizeof *o);
}

/* Read once from a ready stream; returns 1 on data, 0 on EOF, <0 on error. */
static int read_once(an_output_capture_t *c, int fd, enum an_stream s, char *buf, an_error_t *err) {
  ssize_t n = read(fd, buf, READ_CHUNK);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return 1;
    if (errno == EIO) return 0;   /* a pty master whose slave side is closed: its EOF */
    return an_error_set(err, errno, "read %s", s == AN_STREAM_STDOUT ? "stdout" : "stderr");
  }
  if (n == 0) return 0;
  int r = an_output_capture_feed(c, s, buf, (size_t) n, err);
  return r < 0 ? r : 1;
}

int an_output_capture(int stdout_fd, int stderr_fd, int stop_fd, const struct an_output_opts *opts,
                      struct an_output *out, an_error_t *err) {
  memset(out, 0, sizeof *out);
  __attribute__((cleanup(capture_freep))) an_output_capture_t *c = NULL;
  int r = an_output_capture_new(opts, &c, err);
  if (r < 0) return r;
  cleanup_free char *buf = malloc(READ_CHUNK);
  if (!buf) return an_error_set(err, ENOMEM, "output capture");
  struct pollfd pfd[3] = {
      {.fd = stdout_fd, .events = POLLIN},
      {.fd = stderr_fd, .events = POLLIN},
      {.fd = stop_fd, .events = POLLIN},
  };
  const enum an_stream ids[2] = {AN_STREAM_STDOUT, AN_STREAM_STDERR};
  bool stopping = false;
  /* After stop, drain at most this many reads per stream: a writer that
   * keeps writing must not keep the caller here. */
  int reads_after_stop[2] = {STOP_DRAIN_READS, STOP_DRAIN_READS};
  while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
    /* After stop: only what is already in the pipes (timeout 0). */
    int n = poll(pfd, 3, stopping ? 0 : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "output capture: poll");
    }
    if (n == 0) break; /* stopping and nothing left buffered */
    if (pfd[2].fd >= 0 && pfd[2].revents) {
      stopping = true;
      pfd[2].fd = -1;
    }
    for (int i = 0; i < 2; i++) {
      if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) continue;
      if (pfd[i].revents & POLLNVAL) {
        pfd[i].fd = -1;
        continue;
      }
      r = read_once(c, pfd[i].fd, ids[i], buf, err);
      if (r < 0) return r;
      if (r == 0 || (stopping && --reads_after_stop[i] <= 0)) pfd[i].fd = -1;
    }
  }
  return an_output_capture_finish(c, out, err);
}

/* ---- JSON ---------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n) per RFC 3629 section 4, or
 * 0 if the bytes there are not one. */
static size_t utf8_seq_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) { len = 3; lo = 0xA0; }
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
  else if (c == 0xED) { len = 3; hi = 0x9F; }  /* no UTF-16 surrogates */
  else if (c == 0xF0) { len = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) { len = 4; hi = 0x8F; }  /* <= U+10FFFF */
  else return 0;
  if (n < len) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  return len;
}

char *an_utf8_sanitize(const char *buf, size_t len, size_t *out_len) {
  if (len > (SIZE_MAX - 1) / 3) return NULL;
  char *out = malloc(len * 3 + 1);
  if (!out) return NULL;
  const unsigned char *s = (const unsigned char *) buf;
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    size_t k = utf8_seq_len(s + i, len - i);
    if (k) {
      memcpy(out + o, s + i, k);
      o += k;
      i += k;
    } else {
      memcpy(out + o, "\xEF\xBF\xBD", 3); /* U+FFFD */
      o += 3;
      i++;
    }
  }
  out[o] = '\0';
  *out_len = o;
  return out;
}

yajl_gen_status an_json_escape_output(yajl_gen g, const char *buf, size_t len) {
  size_t n = 0;
  cleanup_free char *clean = an_utf8_sanitize(buf ? buf : "", buf ? len : 0, &n);
  if (!clean) return yajl_gen_in_error_state; /* out of memory */
  return yajl_gen_string(g, (const unsigned char *) clean, n);
}

#define KEY(g, k) yajl_gen_string((g), (const unsigned char *) (k), sizeof(k) - 1)

yajl_gen_status an_output_json_fields(yajl_gen g, const struct an_output *o) {
  yajl_gen_status s;
  if ((s = KEY(g, "stdout")) != yajl_gen_status_ok) return s;
  if ((s = an_json_escape_output(g, o->stdout_buf, o->stdout_len)) != yajl_gen_status_ok) return s;
  if ((s = KEY(g, "stderr")) != yajl_gen_status_ok) return s;
  if ((s = an_json_escape_output(g, o->stderr_buf, o->stderr_len)) != yajl_gen_status_ok) return s;
  if ((s = KEY(g, "stdout_truncated")) != yajl_gen_status_ok) return s;
  if ((s = yajl_gen_bool(g, o->stdout_truncated)) != yajl_gen_status_ok) return s;
  if ((s = KEY(g, "stderr_truncated")) != yajl_gen_status_ok) return s;
  return yajl_gen_bool(g, o->stderr_truncated);
}
