/* sandbox/redact.c — streaming secret redaction of an exec's two output
 * streams together (see agentnest/output.h).  One window holds the bytes of
 * both streams in the order they were read, each tagged with its stream.  At
 * every position each secret is tried in each of its forms
 * (sandbox/redact_forms.c) in two modes: along the bytes of that position's
 * stream only (a secret in one stream, however the other stream's output is
 * interleaved and however the reads were cut), and along the combined order
 * (a secret split between stdout and stderr), and continued from the
 * position's stream into the OTHER stream's next bytes after each prefix of
 * the form, not counting the first stream's later bytes (the CLI may read
 * them in the same chunk as the prefix, before the other stream's part:
 * the order of reads then does not matter), and without its first 1..3
 * bytes (a prefix too short to hold back).  A match removes its bytes and
 * puts "[REDACTED:<NAME>]" into each stream it took bytes from.  What may
 * still grow into a match is held back (at most the longest form's span
 * plus REDACT_CROSS_HOLD) until the next feed or the end.  Capping and pipes: sandbox/output.c. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/output.h"
#include "sandbox/redact_internal.h"
#include "util/cleanup.h"

#define REDACT_CHUNK 65536
#define SECRET_NAME_MAX 64

static int by_len_desc(const void *a, const void *b) {
  const struct redact_secret *x = a, *y = b;
  return (x->len < y->len) - (x->len > y->len);
}

void an_redactor_free(an_redactor_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    struct redact_secret *s = &r->secrets[i];
    if (s->value) explicit_bzero(s->value, s->len);
    free(s->value);
    free(s->marker);
    for (size_t k = 0; k < s->nforms; k++) {
      explicit_bzero(s->forms[k].pat, s->forms[k].len);
      free(s->forms[k].pat);
    }
    free(s->forms);
  }
  free(r->secrets);
  if (r->win) explicit_bzero(r->win, r->cap);
  free(r->win);
  free(r->tag);
  free(r->dead);
  free(r->mark);
  free(r->used);
  free(r->next);
  free(r);
}

static void redactor_freep(an_redactor_t **r) { an_redactor_free(*r); }

int an_redactor_new(const struct an_secret *secrets, size_t n, an_redactor_t **out, an_error_t *err) {
  __attribute__((cleanup(redactor_freep))) an_redactor_t *r = calloc(1, sizeof *r);
  if (!r) return an_error_set(err, ENOMEM, "redactor");
  if (n >= UINT16_MAX) return an_error_set(err, EINVAL, "redactor: more than %d secrets", UINT16_MAX - 1);
  r->secrets = calloc(n ? n : 1, sizeof *r->secrets);
  if (!r->secrets) return an_error_set(err, ENOMEM, "redactor");
  for (size_t i = 0; i < n; i++) {
    const char *name = secrets[i].name, *val = secrets[i].value;
    if (!name || !*name || strlen(name) > SECRET_NAME_MAX)
      return an_error_set(err, EINVAL, "secret #%zu: name must be 1..%d bytes", i + 1, SECRET_NAME_MAX);
    if (!val || !*val) return an_error_set(err, EINVAL, "secret %s: empty value", name);
    struct redact_secret *s = &r->secrets[r->n++];
    s->len = strlen(val);
    s->value = strdup(val);
    int m = asprintf(&s->marker, "[REDACTED:%s]", name);
    if (!s->value || m < 0) {
      s->marker = NULL;
      return an_error_set(err, ENOMEM, "secret %s", name);
    }
    s->marker_len = (size_t) m;
    if (an_redact_forms_build(s) < 0) return an_error_set(err, ENOMEM, "secret %s", name);
    for (size_t k = 0; k < s->nforms; k++)
      if (s->forms[k].span > r->max_span) r->max_span = s->forms[k].span;
    an_redact_forms_first_bytes(s, r->first_byte);
  }
  qsort(r->secrets, r->n, sizeof *r->secrets, by_len_desc);
  r->max_hold = r->max_span + REDACT_CROSS_HOLD;
  r->cap = r->max_hold + REDACT_CHUNK;
  r->win = malloc(r->cap);
  r->tag = malloc(r->cap);
  r->dead = calloc(r->cap, sizeof *r->dead);
  r->mark = calloc(r->cap, sizeof *r->mark);
  r->used = malloc((r->max_span + 1) * sizeof *r->used);
  r->next = malloc(r->cap * sizeof *r->next);
  if (!r->win || !r->tag || !r->dead || !r->mark || !r->used || !r->next)
    return an_error_set(err, ENOMEM, "redactor window");
  *out = an_steal(&r);
  return 0;
}

static int out_bytes(an_redactor_t *r, size_t from, size_t to, an_output_stream_sink_fn sink, void *data) {
  if (to <= from) return 0;
  return sink(data, r->tag[from] ? AN_STREAM_STDERR : AN_STREAM_STDOUT, r->win + from, to - from);
}

/* Emit win[0..upto): the marker where one is set, live bytes to their
 * stream in runs, redacted bytes not at all. */
static int emit(an_redactor_t *r, size_t upto, an_output_stream_sink_fn sink, void *data) {
  size_t run = 0; /* start of the pending run of live bytes of one stream */
  int rc;
  for (size_t j = 0; j < upto; j++) {
    if (r->mark[j] || r->dead[j] || r->tag[j] != r->tag[run]) {
      if ((rc = out_bytes(r, run, j, sink, data)) < 0) return rc;
      run = j;
    }
    if (r->mark[j]) {
      const struct redact_secret *s = &r->secrets[r->mark[j] - 1];
      if ((rc = sink(data, r->tag[j] ? AN_STREAM_STDERR : AN_STREAM_STDOUT, s->marker, s->marker_len)) < 0)
        return rc;
    }
    if (r->dead[j]) run = j + 1;
  }
  return out_bytes(r, run, upto, sink, data);
}

/* One attempt of form f of secret k at position i (see struct redact_it);
 * a match is marked in the window. */
static int try_one(an_redactor_t *r, size_t k, const struct redact_form *f, size_t i, size_t wl, bool final,
                   struct redact_it it, size_t *got) {
  it.r = r;
  it.start = it.pos = i;
  it.wl = wl;
  it.used = r->used;
  it.cap_used = r->max_span + 1;
  if (!it.span) it.span = f->span;
  int m = an_redact_form_match(&it, f, final);
  if (got) *got = it.got;
  if (m != FORM_MATCH) return m;
  bool other = false;
  for (size_t u = 0; u < it.nused; u++) {
    size_t p = it.used[u];
    r->dead[p] = true;
    if (r->tag[p] != r->tag[i] && !other) {
      other = true;
      r->mark[p] = (uint16_t) (k + 1);
    }
  }
  r->mark[i] = (uint16_t) (k + 1);
  return FORM_MATCH;
}

/* Try every secret's forms at position i: along i's stream, along the
 * combined order, then continued from i's stream into the OTHER stream's
 * next bytes after each prefix (REDACT_CROSS_HOLD), then without the first
 * 1..REDACT_CROSS_MIN-1 bytes along i's stream.  FORM_MATCH (the match is
 * marked in the window), FORM_PARTIAL or FORM_NONE. */
static int try_at(an_redactor_t *r, size_t i, size_t wl, bool final) {
  for (size_t k = 0; k < r->n; k++) {
    const struct redact_secret *s = &r->secrets[k];
    for (size_t fi = 0; fi < s->nforms; fi++) {
      const struct redact_form *f = &s->forms[fi];
      size_t g0 = 0;
      int m = try_one(r, k, f, i, wl, final, (struct redact_it){.tag = r->tag[i]}, &g0);
      if (m == FORM_NONE) m = try_one(r, k, f, i, wl, final, (struct redact_it){.tag = -1}, NULL);
      for (size_t sw = 1; m == FORM_NONE && sw < g0; sw++)
        m = try_one(r, k, f, i, wl, final,
                    (struct redact_it){.tag = r->tag[i], .sw_got = sw, .span = f->span + REDACT_CROSS_HOLD}, NULL);
      for (size_t from = 1; m == FORM_NONE && from < REDACT_CROSS_MIN && f->len - from >= REDACT_CUT_MIN; from++)
        m = try_one(r, k, f, i, wl, final, (struct redact_it){.tag = r->tag[i], .from = from}, NULL);
      if (m != FORM_NONE) return m; /* FORM_PARTIAL: may complete, decide later */
    }
  }
  return FORM_NONE;
}

/* Scan win[0..wl): emit what can no longer be part of a match, keep in
 * win[0..held) what may still grow into one (nothing when final). */
static int scan(an_redactor_t *r, size_t wl, bool final, an_output_stream_sink_fn sink, void *data) {
  size_t hold = wl;
  for (size_t i = wl; i-- > 0;)
    r->next[i] = i + 1 == wl ? (uint32_t) wl : r->tag[i + 1] != r->tag[i] ? (uint32_t) (i + 1) : r->next[i + 1];
  for (size_t i = 0; i < wl; i++) {
    if (r->dead[i] || !r->first_byte[(unsigned char) r->win[i]]) continue;
    if (try_at(r, i, wl, final) == FORM_PARTIAL) {
      hold = i;
      break;
    }
  }
  int rc = emit(r, hold, sink, data);
  if (rc < 0) return rc;
  size_t left = wl - hold;
  memmove(r->win, r->win + hold, left);
  memmove(r->tag, r->tag + hold, left);
  memmove(r->dead, r->dead + hold, left * sizeof *r->dead);
  memmove(r->mark, r->mark + hold, left * sizeof *r->mark);
  r->held = left;
  return 0;
}

int an_redactor_feed_stream(an_redactor_t *r, enum an_stream stream, const char *buf, size_t len,
                            an_output_stream_sink_fn sink, void *data) {
  if (r->n == 0) return len ? sink(data, stream, buf, len) : 0;
  while (len > 0) {
    size_t piece = len < REDACT_CHUNK ? len : REDACT_CHUNK;
    memcpy(r->win + r->held, buf, piece);
    memset(r->tag + r->held, stream == AN_STREAM_STDERR, piece);
    memset(r->dead + r->held, 0, piece * sizeof *r->dead);
    memset(r->mark + r->held, 0, piece * sizeof *r->mark);
    int rc = scan(r, r->held + piece, false, sink, data);
    if (rc < 0) return rc;
    buf += piece;
    len -= piece;
  }
  return 0;
}

int an_redactor_flush_streams(an_redactor_t *r, an_output_stream_sink_fn sink, void *data) {
  if (r->n == 0 || r->held == 0) return 0;
  return scan(r, r->held, true, sink, data);
}

/* The one-stream interface: everything is "stdout". */
struct one {
  an_output_sink_fn sink;
  void *data;
};

static int one_sink(void *data, enum an_stream s, const char *buf, size_t len) {
  (void) s;
  const struct one *o = data;
  return o->sink(o->data, buf, len);
}

int an_redactor_feed(an_redactor_t *r, const char *buf, size_t len, an_output_sink_fn sink, void *data) {
  struct one o = {sink, data};
  return an_redactor_feed_stream(r, AN_STREAM_STDOUT, buf, len, one_sink, &o);
}

int an_redactor_flush(an_redactor_t *r, an_output_sink_fn sink, void *data) {
  struct one o = {sink, data};
  return an_redactor_flush_streams(r, one_sink, &o);
}
