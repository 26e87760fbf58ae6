/* sandbox/redact.c — streaming secret redaction: replaces every occurrence
 * of a secret value by "[REDACTED:<NAME>]", also across read boundaries, by
 * holding back a tail that could still start a secret (see
 * agentnest/output.h).  Capping and pipes live in sandbox/output.c. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/output.h"
#include "util/cleanup.h"

#define REDACT_CHUNK 65536
#define SECRET_NAME_MAX 64

struct redact_secret {
  char *value;
  size_t len;
  char *marker;      /* "[REDACTED:NAME]" */
  size_t marker_len;
};

struct an_redactor {
  struct redact_secret *secrets; /* sorted by length, longest first */
  size_t n;
  size_t max_len;
  bool first_byte[256];          /* bytes that can start a secret */
  char *win;                     /* held-back tail + current chunk */
  size_t held;                   /* bytes of win held back from earlier feeds */
};

static int by_len_desc(const void *a, const void *b) {
  const struct redact_secret *x = a, *y = b;
  return (x->len < y->len) - (x->len > y->len);
}

void an_redactor_free(an_redactor_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    if (r->secrets[i].value) explicit_bzero(r->secrets[i].value, r->secrets[i].len);
    free(r->secrets[i].value);
    free(r->secrets[i].marker);
  }
  free(r->secrets);
  if (r->win) explicit_bzero(r->win, r->max_len + REDACT_CHUNK);
  free(r->win);
  free(r);
}

static void redactor_freep(an_redactor_t **r) { an_redactor_free(*r); }

int an_redactor_new(const struct an_secret *secrets, size_t n, an_redactor_t **out, an_error_t *err) {
  __attribute__((cleanup(redactor_freep))) an_redactor_t *r = calloc(1, sizeof *r);
  if (!r) return an_error_set(err, ENOMEM, "redactor");
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
    if (s->len > r->max_len) r->max_len = s->len;
    r->first_byte[(unsigned char) val[0]] = true;
  }
  qsort(r->secrets, r->n, sizeof *r->secrets, by_len_desc);
  r->win = malloc(r->max_len + REDACT_CHUNK);
  if (!r->win) return an_error_set(err, ENOMEM, "redactor window");
  *out = an_steal(&r);
  return 0;
}

/* Scan win[0..wl).  Emits everything that cannot be part of a secret any
 * more; keeps in win[0..held) what may still grow into one (not when final). */
static int scan(an_redactor_t *r, size_t wl, bool final, an_output_sink_fn sink, void *data) {
  const char *w = r->win;
  size_t i = 0, emit = 0;
  int rc;
  while (i < wl) {
    if (!r->first_byte[(unsigned char) w[i]]) {
      i++;
      continue;
    }
    const struct redact_secret *hit = NULL;
    bool maybe_longer = false;
    for (size_t k = 0; k < r->n; k++) {
      const struct redact_secret *s = &r->secrets[k];
      if (wl - i >= s->len) {
        if (memcmp(w + i, s->value, s->len) == 0) {
          hit = s;
          break; /* longest complete match (sorted) */
        }
      } else if (!final && memcmp(w + i, s->value, wl - i) == 0) {
        maybe_longer = true; /* a longer secret may complete in the next read */
        break;
      }
    }
    if (maybe_longer) {
      if (i > emit && (rc = sink(data, w + emit, i - emit)) < 0) return rc;
      memmove(r->win, w + i, wl - i);
      r->held = wl - i;
      return 0;
    }
    if (hit) {
      if (i > emit && (rc = sink(data, w + emit, i - emit)) < 0) return rc;
      if ((rc = sink(data, hit->marker, hit->marker_len)) < 0) return rc;
      i += hit->len;
      emit = i;
      continue;
    }
    i++;
  }
  r->held = 0;
  if (wl > emit && (rc = sink(data, w + emit, wl - emit)) < 0) return rc;
  return 0;
}

int an_redactor_feed(an_redactor_t *r, const char *buf, size_t len, an_output_sink_fn sink, void *data) {
  if (r->n == 0) return len ? sink(data, buf, len) : 0;
  while (len > 0) {
    size_t piece = len < REDACT_CHUNK ? len : REDACT_CHUNK;
    memcpy(r->win + r->held, buf, piece);
    int rc = scan(r, r->held + piece, false, sink, data);
    if (rc < 0) return rc;
    buf += piece;
    len -= piece;
  }
  return 0;
}

int an_redactor_flush(an_redactor_t *r, an_output_sink_fn sink, void *data) {
  if (r->n == 0 || r->held == 0) return 0;
  return scan(r, r->held, true, sink, data);
}
