/* Tests of secret redaction in its common encodings and across the two
 * streams (issue 10 item 8): base64 (padded, unpadded, wrapped, inside a
 * longer encoded text), base64url, hex in both cases, URL and JSON \u
 * escapes, and a secret split between stdout and stderr or interleaved
 * with the other stream.  The encodings are made here independently
 * (OpenSSL's EVP_EncodeBlock, printf), fed in pieces of every size from 1
 * byte, and the captured output must hold none of them. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/output.h"

#define SECRET "s3cr3t-T0ken/with+chars?"
static const struct an_secret secrets[] = {
    {"TOKEN", SECRET},
    {"PASS", "p\xc3\xa4ssw\xc3\xb6rd\"x"},      /* "pässwörd\"x" */
    {"EMOJI", "key\xf0\x9f\x94\x91value"},       /* "key🔑value" */
};

struct out {
  char *so, *se;
};

/* Feed stdout text `a` and stderr text `b` in pieces of `step`: alternately,
 * or (seq) all of a, then all of b. */
static struct out capture_ex(const char *a, const char *b, size_t step, bool seq) {
  an_output_capture_t *c = NULL;
  an_error_t err = NULL;
  struct an_output_opts o = {.secrets = secrets, .nsecrets = 3};
  cr_assert_eq(an_output_capture_new(&o, &c, &err), 0);
  size_t la = strlen(a), lb = strlen(b), ia = 0, ib = 0;
  while (ia < la || ib < lb) {
    while (seq && ia < la) {
      size_t n = la - ia < step ? la - ia : step;
      cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDOUT, a + ia, n, &err), 0);
      ia += n;
    }
    if (ia < la) {
      size_t n = la - ia < step ? la - ia : step;
      cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDOUT, a + ia, n, &err), 0);
      ia += n;
    }
    if (ib < lb) {
      size_t n = lb - ib < step ? lb - ib : step;
      cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDERR, b + ib, n, &err), 0);
      ib += n;
    }
  }
  struct an_output out;
  cr_assert_eq(an_output_capture_finish(c, &out, &err), 0);
  an_output_capture_free(c);
  return (struct out){out.stdout_buf, out.stderr_buf};
}

static struct out capture(const char *a, const char *b, size_t step) { return capture_ex(a, b, step, false); }

static char *b64(const char *s, size_t len) {
  char *o = malloc(4 * ((len + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *) o, (const unsigned char *) s, (int) len);
  return o;
}

/* base64 -> base64url, without padding */
static void to_url(char *s) {
  for (char *p = s; *p; p++) *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
  char *eq = strchr(s, '=');
  if (eq) *eq = '\0';
}

/* `text` (an encoding of SECRET, with some context) must not survive. */
static void assert_redacted(const char *what, const char *text, const char *leak) {
  for (size_t step = 1; step <= strlen(text) + 1; step += (step < 16 ? 1 : 13)) {
    struct out o = capture(text, "", step);
    cr_assert_null(strstr(o.so, leak), "%s (pieces of %zu): leaked in: %s", what, step, o.so);
    cr_assert(strstr(o.so, "[REDACTED:"), "%s (pieces of %zu): no marker in: %s", what, step, o.so);
    free(o.so);
    free(o.se);
  }
}

Test(redact, base64_padded_unpadded_wrapped_and_in_context) {
  char *e = b64(SECRET, strlen(SECRET));
  char text[512];
  snprintf(text, sizeof text, "b64: %s\n", e);
  assert_redacted("base64", text, e + 4);
  /* without padding */
  char *np = strdup(e);
  char *eq = strchr(np, '=');
  if (eq) *eq = '\0';
  snprintf(text, sizeof text, "nopad %s.", np);
  assert_redacted("base64 without padding", text, np + 4);
  /* wrapped every 8 characters, as base64 -w 8 */
  char wrapped[512];
  size_t w = 0;
  for (size_t i = 0; e[i]; i++) {
    wrapped[w++] = e[i];
    if (i % 8 == 7) wrapped[w++] = '\n';
  }
  wrapped[w] = '\0';
  struct out o = capture(wrapped, "", 3);
  cr_assert(strstr(o.so, "[REDACTED:TOKEN]"), "wrapped base64 leaked: %s", o.so);
  for (size_t i = 8; i + 8 < strlen(e); i += 9) /* no whole 8-char line of it remains */
    cr_assert_null(strstr(o.so, (char[9]){e[i - 8], e[i - 7], e[i - 6], e[i - 5], e[i - 4], e[i - 3], e[i - 2], e[i - 1], 0}),
                   "wrapped base64 leaked: %s", o.so);
  free(o.so);
  free(o.se);
  /* inside a longer encoded text at each alignment: "Basic " + b64("user:" + SECRET) */
  for (int pre = 0; pre < 3; pre++) {
    char plain[128];
    snprintf(plain, sizeof plain, "%.*suser:%s", pre, "ab", SECRET);
    char *ctx = b64(plain, strlen(plain));
    snprintf(text, sizeof text, "Authorization: Basic %s\n", ctx);
    /* the middle of the secret's part must be gone */
    char mid[16];
    size_t from = (8 * ((size_t) pre + 5) + 5) / 6 + 2;
    snprintf(mid, sizeof mid, "%.10s", ctx + from);
    assert_redacted("base64 in context", text, mid);
    free(ctx);
  }
  free(np);
  free(e);
}

Test(redact, base64url_and_hex_in_both_cases) {
  char *e = b64(SECRET, strlen(SECRET));
  to_url(e);
  char text[512];
  snprintf(text, sizeof text, "url=%s&x=1", e);
  assert_redacted("base64url", text, e + 4);
  char hex[128], HEX[128];
  for (size_t i = 0; i < strlen(SECRET); i++) {
    sprintf(hex + 2 * i, "%02x", (unsigned char) SECRET[i]);
    sprintf(HEX + 2 * i, "%02X", (unsigned char) SECRET[i]);
  }
  snprintf(text, sizeof text, "hex %s\n", hex);
  assert_redacted("hex", text, hex + 2);
  snprintf(text, sizeof text, "HEX %s\n", HEX);
  assert_redacted("HEX", text, HEX + 2);
  free(e);
}

Test(redact, url_and_json_escapes) {
  char text[1024], pct[256], PCT[256], u[512];
  size_t n = 0, m = 0;
  for (const char *p = SECRET; *p; p++) {
    n += (size_t) sprintf(pct + n, "%%%02x", (unsigned char) *p); /* every byte escaped */
    m += (size_t) sprintf(u + m, "\\u%04X", (unsigned char) *p);
  }
  size_t k = 0;
  for (const char *p = SECRET; *p; p++) /* encodeURIComponent: only reserved bytes */
    k += (size_t) (strchr("/+?", *p) ? sprintf(PCT + k, "%%%02X", (unsigned char) *p) : sprintf(PCT + k, "%c", *p));
  snprintf(text, sizeof text, "GET /?t=%s HTTP/1.1\n", pct);
  assert_redacted("URL every byte", text, pct + 6);
  snprintf(text, sizeof text, "GET /?t=%s HTTP/1.1\n", PCT);
  assert_redacted("URL component", text, "T0ken%2Fwith");
  snprintf(text, sizeof text, "{\"t\": \"%s\"}\n", u);
  assert_redacted("JSON \\u", text, u + 12);
  /* json.dumps(ensure_ascii=True) of the non-ASCII ones */
  snprintf(text, sizeof text, "{\"p\": \"p\\u00e4ssw\\u00f6rd\\\"x\", \"e\": \"key\\ud83d\\udd11value\"}");
  struct out o = capture(text, "", 5);
  cr_assert_str_eq(o.so, "{\"p\": \"[REDACTED:PASS]\", \"e\": \"[REDACTED:EMOJI]\"}");
  free(o.so);
  free(o.se);
}

Test(redact, secret_split_between_stdout_and_stderr) {
  for (size_t step = 1; step <= 40; step++) {
    /* read in this order: stdout's first half, then stderr's second half */
    struct out o = capture_ex("x=s3cr3t-T0ken", "/with+chars? y", step, true);
    cr_assert_null(strstr(o.so, "T0ken"), "pieces of %zu: stdout %s", step, o.so);
    cr_assert_null(strstr(o.se, "with+chars"), "pieces of %zu: stderr %s", step, o.se);
    cr_assert(strstr(o.so, "[REDACTED:TOKEN]") || strstr(o.se, "[REDACTED:TOKEN]"), "no marker");
    free(o.so);
    free(o.se);
  }
}

Test(redact, secret_interleaved_with_the_other_stream) {
  for (size_t step = 1; step <= 30; step++) {
    struct out o = capture("a " SECRET " b", "noise on stderr, noise again", step);
    cr_assert_str_eq(o.so, "a [REDACTED:TOKEN] b", "pieces of %zu", step);
    cr_assert_str_eq(o.se, "noise on stderr, noise again", "pieces of %zu", step);
    free(o.so);
    free(o.se);
  }
}

Test(redact, ordinary_output_is_unchanged) {
  const char *text = "100% done; path C:\\new\\table; {\"a\":\"\\u0041\"} deadbeef QUJD+/== s3cr3t-T0k";
  struct out o = capture(text, "stderr: 0123456789abcdef", 7);
  cr_assert_str_eq(o.so, text);
  cr_assert_str_eq(o.se, "stderr: 0123456789abcdef");
  free(o.so);
  free(o.se);
}

/* Interleavings a terminal does not show: the value with an ANSI escape
 * sequence (SGR, OSC title) between its bytes, or as UTF-16LE / UTF-16BE
 * (NUL bytes between ASCII ones), displays as the value itself and leaked
 * in clear before. */
Test(redact, secret_interleaved_with_terminal_invisible_bytes) {
  static const char *seps[] = {"\x1b[0m", "\x1b[38;5;1m", "\x1b]0;t\x07", "\x1b]0;t\x1b\\", "\x1b" "7", "\0"};
  static const size_t seplen[] = {4, 10, 6, 7, 2, 1};
  for (size_t k = 0; k < sizeof seps / sizeof *seps; k++)
    for (int be = 0; be < (k == 5 ? 2 : 1); be++) {
      char text[1024];
      size_t n = 0;
      text[n++] = '<';
      if (be) text[n++] = '\0';   /* UTF-16BE: NUL before each byte */
      for (const char *p = SECRET; *p; p++) {
        text[n++] = *p;
        if (p[1] || !be) {
          memcpy(text + n, seps[k], seplen[k]);
          n += seplen[k];
        }
      }
      text[n++] = '>';
      for (size_t step = 1; step <= n; step += (step < 16 ? 1 : 11)) {
        an_output_capture_t *c = NULL;
        an_error_t err = NULL;
        struct an_output_opts o = {.secrets = secrets, .nsecrets = 3};
        cr_assert_eq(an_output_capture_new(&o, &c, &err), 0);
        for (size_t i = 0; i < n; i += step)
          cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDOUT, text + i, n - i < step ? n - i : step, &err), 0);
        struct an_output out;
        cr_assert_eq(an_output_capture_finish(c, &out, &err), 0);
        an_output_capture_free(c);
        /* what the terminal shows: the output without the separators */
        char shown[1024];
        size_t m = 0;
        for (size_t i = 0; i < out.stdout_len;) {
          if (i + seplen[k] <= out.stdout_len && !memcmp(out.stdout_buf + i, seps[k], seplen[k])) {
            i += seplen[k];
          } else if (out.stdout_buf[i] == '\0') {
            i++;
          } else {
            shown[m++] = out.stdout_buf[i++];
          }
        }
        shown[m] = '\0';
        cr_assert_str_eq(shown, "<[REDACTED:TOKEN]>", "separator %zu%s, pieces of %zu", k, be ? " (BE)" : "", step);
        free(out.stdout_buf);
        free(out.stderr_buf);
      }
    }
}

/* Red-team case: a secret split between stdout and stderr while stdout is
 * busy.  Written in the order stdout "split: " + head, stderr tail + "\n",
 * stdout 5000 dots, the CLI reads stdout's head and the dots in one chunk,
 * then stderr's tail, more than the 4096-byte interleave slack later.  It
 * leaked both halves in clear before the cross-stream continuation.  Every
 * split point is tried; no piece of 4 or more bytes of the value may
 * survive in either stream. */
Test(redact, split_secret_read_after_the_other_streams_later_output) {
  static const char tok[] = "hunter2-S3cr3t-Value-XYZ";
  static const struct an_secret sec[] = {{"TOK", tok}};
  size_t tl = strlen(tok);
  for (size_t cut = 1; cut < tl; cut++) {
    char a[8192], b[64];
    int na = snprintf(a, sizeof a, "split: %.*s", (int) cut, tok);
    memset(a + na, '.', 5000);
    a[na + 5000] = '\0';
    snprintf(b, sizeof b, "%s\n", tok + cut);
    an_output_capture_t *c = NULL;
    an_error_t err = NULL;
    struct an_output_opts o = {.secrets = sec, .nsecrets = 1};
    cr_assert_eq(an_output_capture_new(&o, &c, &err), 0);
    cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDOUT, a, strlen(a), &err), 0);
    cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDERR, b, strlen(b), &err), 0);
    struct an_output out;
    cr_assert_eq(an_output_capture_finish(c, &out, &err), 0);
    an_output_capture_free(c);
    for (size_t i = 0; i + 4 <= tl; i++) {
      char piece[32];
      snprintf(piece, sizeof piece, "%.4s", tok + i);
      cr_assert_null(strstr(out.stdout_buf, piece), "cut %zu: stdout holds \"%s\": %.40s", cut, piece, out.stdout_buf);
      cr_assert_null(strstr(out.stderr_buf, piece), "cut %zu: stderr holds \"%s\": %s", cut, piece, out.stderr_buf);
    }
    cr_assert(strstr(out.stdout_buf, "[REDACTED:TOK]") || strstr(out.stderr_buf, "[REDACTED:TOK]"),
              "cut %zu: no marker", cut);
    cr_assert_eq(strspn(strchr(out.stdout_buf, '.'), "."), 5000, "cut %zu: the dots stay", cut);
    free(out.stdout_buf);
    free(out.stderr_buf);
  }
}
