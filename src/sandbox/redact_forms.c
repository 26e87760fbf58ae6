/* sandbox/redact_forms.c — the forms in which a secret is looked for in
 * output (see sandbox/redact_internal.h): the value with each byte either
 * raw or escaped (URL %XX, '+' for a space, JSON \uXXXX incl. surrogate
 * pairs, \xXX, JSON's short escapes; mixed freely), its hex (either case),
 * and the stable middle of its base64 and base64url encodings at each of the
 * three alignments a value can have inside a longer encoded stream (so
 * padding, no padding and a surrounding context all match), line breaks
 * allowed between base64 characters.  Matching walks the redactor's window
 * through an iterator that skips redacted bytes and, per mode, the other
 * stream's bytes. */
#include <stdlib.h>
#include <string.h>
#include "sandbox/redact_internal.h"

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64 of `len` bytes (no padding); out has room for 4*(len+2)/3+1. */
static size_t b64(const unsigned char *in, size_t len, const char *alpha, char *out) {
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    acc = (acc << 8) | in[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out[o++] = alpha[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out[o++] = alpha[(acc << (6 - bits)) & 63];
  out[o] = '\0';
  return o;
}

static int add_form(struct redact_secret *s, enum form_kind kind, char *pat, size_t len, size_t span) {
  for (size_t i = 0; i < s->nforms; i++) /* the same text twice: once */
    if (s->forms[i].kind == kind && s->forms[i].len == len && !memcmp(s->forms[i].pat, pat, len)) {
      free(pat);
      return 0;
    }
  struct redact_form *f = &s->forms[s->nforms++];
  f->kind = kind;
  f->pat = pat;
  f->len = len;
  f->span = span + REDACT_INTERLEAVE_SLACK;
  return 0;
}

/* The base64 characters that depend on the value's bits only, when the
 * value starts `k` bytes after a 3-byte group boundary. */
static int add_b64(struct redact_secret *s, const char *alpha, size_t k) {
  size_t n = k + s->len + 2;
  unsigned char *buf = calloc(1, n);
  char *enc = malloc(4 * (n + 2) / 3 + 1);
  if (!buf || !enc) {
    free(buf);
    free(enc);
    return -1;
  }
  memcpy(buf + k, s->value, s->len);
  b64(buf, n, alpha, enc);
  free(buf);
  size_t from = (8 * k + 5) / 6, to = (8 * (k + s->len)) / 6;
  if (to < from + REDACT_MIN_B64) {
    free(enc);
    return 0;
  }
  memmove(enc, enc + from, to - from);
  enc[to - from] = '\0';
  return add_form(s, FORM_B64, enc, to - from, 2 * (to - from));
}

int an_redact_forms_build(struct redact_secret *s) {
  s->forms = calloc(2 + 2 * 3, sizeof *s->forms);
  if (!s->forms) return -1;
  char *raw = malloc(s->len + 1);
  if (!raw) return -1;
  memcpy(raw, s->value, s->len + 1);
  /* a byte is at most 6 output bytes (\u00XX) */
  add_form(s, FORM_CHARS, raw, s->len, 6 * s->len);
  if (s->len >= REDACT_MIN_ENCODED) {
    char *hex = malloc(2 * s->len + 1);
    if (!hex) return -1;
    for (size_t i = 0; i < s->len; i++) {
      static const char digits[] = "0123456789abcdef";
      hex[2 * i] = digits[(unsigned char) s->value[i] >> 4];
      hex[2 * i + 1] = digits[(unsigned char) s->value[i] & 15];
    }
    hex[2 * s->len] = '\0';
    add_form(s, FORM_HEX, hex, 2 * s->len, 2 * s->len);
    for (size_t k = 0; k < 3; k++)
      if (add_b64(s, B64, k) < 0 || add_b64(s, B64URL, k) < 0) return -1;
  }
  return 0;
}

void an_redact_forms_first_bytes(const struct redact_secret *s, bool first[256]) {
  for (size_t i = 0; i < s->nforms; i++)
    for (size_t k = 0; k < REDACT_CROSS_MIN && k < s->forms[i].len; k++) { /* k > 0: a cut-off start */
      const struct redact_form *f = &s->forms[i];
      unsigned char c = (unsigned char) f->pat[k];
      first[c] = true;
      if (f->kind == FORM_CHARS) {
        first['%'] = first['\\'] = true;
        if (c == ' ') first['+'] = true;
      } else if (f->kind == FORM_HEX && c >= 'a' && c <= 'f') {
        first[c - 'a' + 'A'] = true;
      }
    }
}

/* ---- matching ------------------------------------------------------------- */

/* Next byte of the match: 1 (in *c), IT_END (window ended: maybe later),
 * IT_FAR (past the form's span: no match). */
enum { IT_END = 0, IT_FAR = -1 };

/* Whether window byte b, met after a match began, is one a terminal shows
 * nothing for: NUL (so UTF-16/32 text of an ASCII value reads as the value)
 * or part of an ANSI escape sequence (ESC x; CSI ESC [ ... final 0x40-0x7E;
 * OSC ESC ] ... BEL or ESC \), so "h\e[0mu\e[0mn..." is the value on a
 * terminal and is found as it.  it->esc: 0 outside, 1 after ESC, 2 in a
 * CSI, 3 in an OSC, 4 after ESC in an OSC. */
static bool invisible(struct redact_it *it, unsigned char b) {
  switch (it->esc) {
  case 0:
    if (b == 0x1b) it->esc = 1;
    return b == 0 || b == 0x1b;
  case 1: it->esc = b == '[' ? 2 : b == ']' ? 3 : 0; return true;
  case 2: if (b >= 0x40 && b <= 0x7e) it->esc = 0; return true;
  case 3: it->esc = b == 0x07 ? 0 : b == 0x1b ? 4 : 3; return true;
  default: it->esc = 0; return true;
  }
}

static int it_get(struct redact_it *it, unsigned char *c) {
  const struct an_redactor *r = it->r;
  for (;;) {
    if (it->pos - it->start >= it->span) return IT_FAR;
    if (it->pos >= it->wl) return IT_END;
    size_t p = it->pos++;
    if (r->dead[p]) continue;
    if (it->sw_got && !it->switched && it->got == it->sw_got) { /* continue in the other stream */
      it->switched = true;
      it->tag = !it->tag;
      it->esc = 0;
      if (r->tag[p] != it->tag) { /* jump over the first stream's later bytes */
        it->pos = r->next[p];
        continue;
      }
    }
    if (it->tag >= 0 && r->tag[p] != it->tag) continue;
    if (it->skip_invisible && it->got > 0 && invisible(it, (unsigned char) r->win[p])) continue;
    if (it->skip_nl && it->got > 0 && (r->win[p] == '\n' || r->win[p] == '\r')) {
      if (++it->skipped > it->max_skip) return IT_FAR;
      continue;
    }
    if (it->nused < it->cap_used) it->used[it->nused++] = (uint32_t) p;
    it->got++;
    *c = (unsigned char) r->win[p];
    return 1;
  }
}

static int hexval(unsigned char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* `n` hex digits into *v: 1, or a negative it_get result / -2 not hex. */
static int get_hex(struct redact_it *it, int n, uint32_t *v) {
  *v = 0;
  for (int i = 0; i < n; i++) {
    unsigned char c;
    int g = it_get(it, &c);
    if (g != 1) return g;
    int h = hexval(c);
    if (h < 0) return -2;
    *v = (*v << 4) | (uint32_t) h;
  }
  return 1;
}

/* The code point of the UTF-8 sequence at s[0..n) and its length, or 0. */
static size_t utf8_cp(const unsigned char *s, size_t n, uint32_t *cp) {
  size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
  if (!len || len > n) return 0;
  uint32_t v = s[0] & (0x3F >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  *cp = v;
  return len;
}

/* One byte (or, for \u, one UTF-8 sequence) of the value at pat[k] in an
 * escaped form; the backslash or percent sign is read already (`lead`).
 * Returns the value bytes consumed (>= 1), 0 no match, IT_END / IT_FAR
 * through FORM_PARTIAL / FORM_NONE. */
static int escaped(struct redact_it *it, unsigned char lead, const unsigned char *pat, size_t k, size_t len,
                   bool *partial) {
  unsigned char b = pat[k], c;
  uint32_t v;
  int g;
  if (lead == '+') return b == ' ';
  if (lead == '%') {
    g = get_hex(it, 2, &v);
    if (g == IT_END) *partial = true;
    return g == 1 && v == b;
  }
  /* lead == '\\' */
  if ((g = it_get(it, &c)) != 1) {
    if (g == IT_END) *partial = true;
    return 0;
  }
  static const char shorts[] = "\"\"\\\\//n\nt\tr\rb\bf\f";
  for (const char *p = shorts; *p; p += 2)
    if (c == (unsigned char) p[0]) return b == (unsigned char) p[1];
  if (c == 'x') {
    g = get_hex(it, 2, &v);
    if (g == IT_END) *partial = true;
    return g == 1 && v == b;
  }
  if (c != 'u') return 0;
  g = get_hex(it, 4, &v);
  if (g != 1) {
    if (g == IT_END) *partial = true;
    return 0;
  }
  if (b < 0x80) return v == b;
  uint32_t cp;
  size_t n = utf8_cp(pat + k, len - k, &cp);
  if (!n) return 0;
  if (cp < 0x10000) return v == cp ? (int) n : 0;
  if (v != 0xD800 + ((cp - 0x10000) >> 10)) return 0;
  unsigned char bs, u;
  uint32_t lo;
  if ((g = it_get(it, &bs)) != 1 || bs != '\\' || (g = it_get(it, &u)) != 1 || u != 'u' ||
      (g = get_hex(it, 4, &lo)) != 1) {
    if (g == IT_END) *partial = true;
    return 0;
  }
  return lo == 0xDC00 + ((cp - 0x10000) & 0x3FF) ? (int) n : 0;
}

int an_redact_form_match(struct redact_it *it, const struct redact_form *f, bool final) {
  const unsigned char *pat = (const unsigned char *) f->pat;
  it->skip_nl = f->kind == FORM_B64;
  it->skip_invisible = f->kind == FORM_CHARS;
  it->max_skip = f->len;
  for (size_t k = it->from; k < f->len;) {
    unsigned char c;
    int g = it_get(it, &c);
    if (g == IT_END && it->sw_got && it->got == it->sw_got && it->sw_got < REDACT_CROSS_MIN) return FORM_NONE;
    if (g == IT_END) return final ? FORM_NONE : FORM_PARTIAL;
    if (g == IT_FAR) return FORM_NONE;
    if (f->kind == FORM_HEX) {
      if ((c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c) != pat[k]) return FORM_NONE;
      k++;
      continue;
    }
    if (c == pat[k]) {
      k++;
      continue;
    }
    if (f->kind != FORM_CHARS || (c != '%' && c != '\\' && c != '+')) return FORM_NONE;
    bool partial = false;
    int n = escaped(it, c, pat, k, f->len, &partial);
    if (partial) return final ? FORM_NONE : FORM_PARTIAL;
    if (n <= 0) return FORM_NONE;
    k += (size_t) n;
  }
  return FORM_MATCH;
}
