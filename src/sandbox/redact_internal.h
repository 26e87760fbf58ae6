/* sandbox/redact_internal.h — the redactor's state and the forms a secret
 * is looked for in (internal; sandbox/redact.c and redact_forms.c). */
#ifndef AN_SANDBOX_REDACT_INTERNAL_H
#define AN_SANDBOX_REDACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agentnest/output.h"

/* Bytes of the other stream (or already-redacted bytes) a match may skip
 * over: the pieces of one secret must lie within its form's span plus this
 * many bytes of the combined output. */
#define REDACT_INTERLEAVE_SLACK 4096
/* Secrets shorter than this are looked for raw/escaped only (their hex and
 * base64 would match too much unrelated text). */
#define REDACT_MIN_ENCODED 3
/* Shortest stable base64 middle looked for. */
#define REDACT_MIN_B64 4
/* Cross-stream continuation: a form's first bytes in one stream continued
 * by the OTHER stream's next bytes (read after them), however many bytes
 * the first stream wrote meanwhile (the CLI may read them in the same
 * chunk), up to this many bytes of the combined output. */
#define REDACT_CROSS_HOLD 65536
/* A pending prefix this long (window bytes) is held back for such a
 * continuation; a shorter one is not (it would hold back all output after
 * every common byte), but then a form is also found without its first
 * REDACT_CROSS_MIN - 1 bytes, so at most that many bytes of it can show. */
#define REDACT_CROSS_MIN 4
/* Shortest rest of a form looked for without its first bytes. */
#define REDACT_CUT_MIN 6

enum form_kind {
  FORM_CHARS,  /* each byte raw or escaped: %XX, +, \uXXXX, \xXX, \" \\ \/ \n \t \r \b \f */
  FORM_HEX,    /* lowercase hex in pat; matched in either case */
  FORM_B64,    /* base64 / base64url characters; CR and LF between them skipped */
};

struct redact_form {
  enum form_kind kind;
  char *pat;
  size_t len;
  size_t span;   /* most window bytes one match may cover (incl. the slack) */
};

struct redact_secret {
  char *value;
  size_t len;
  char *marker;      /* "[REDACTED:NAME]" */
  size_t marker_len;
  struct redact_form *forms;
  size_t nforms;
};

struct an_redactor {
  struct redact_secret *secrets; /* sorted by length, longest first */
  size_t n;
  size_t max_span;               /* longest span of any form */
  size_t max_hold;               /* most bytes held back: max_span + REDACT_CROSS_HOLD */
  bool first_byte[256];          /* bytes that can start a match */
  size_t cap;                    /* window capacity: max_span + chunk */
  char *win;                     /* held-back tail + current chunk */
  uint8_t *tag;                  /* per byte: 0 stdout, 1 stderr */
  bool *dead;                    /* per byte: part of a redacted match */
  uint16_t *mark;                /* per byte: 1 + secret index whose marker goes here */
  uint32_t *used;                /* scratch: window positions of one match */
  uint32_t *next;                /* per byte: next position of the other stream (or the end) */
  size_t held;                   /* bytes of win held back from earlier feeds */
};

/* Where a match attempt reads: window positions from `start`, skipping
 * dead bytes and (tag >= 0) bytes of the other stream. */
struct redact_it {
  const struct an_redactor *r;
  size_t start, pos, wl, span;
  int tag;
  bool skip_nl;
  bool skip_invisible;   /* NUL and ANSI escape sequences between the bytes */
  uint8_t esc;           /* where in an escape sequence being skipped */
  size_t got, skipped, max_skip;
  size_t sw_got;         /* > 0: after this many bytes continue in the other stream */
  bool switched;
  size_t from;           /* match the form from this pattern byte (a cut-off start) */
  uint32_t *used;
  size_t nused, cap_used;
};

enum { FORM_NONE = 0, FORM_MATCH = 1, FORM_PARTIAL = 2 };

/* Fill s->forms from s->value / s->len.  Returns 0 or -1 (out of memory). */
int an_redact_forms_build(struct redact_secret *s);

/* Mark in first[] every byte a match of one of s's forms can start with. */
void an_redact_forms_first_bytes(const struct redact_secret *s, bool first[256]);

/* Try form `f` at it->start (it->pos == it->start, it->span = f->span).
 * FORM_MATCH (it->used[0..nused) are the positions matched), FORM_NONE, or
 * FORM_PARTIAL when the window ended while the match could still complete
 * (never when `final`; never when a switch to the other stream found no
 * byte there after fewer than REDACT_CROSS_MIN bytes).  it->from: start at
 * that byte of the form's pattern. */
int an_redact_form_match(struct redact_it *it, const struct redact_form *f, bool final);

#endif
