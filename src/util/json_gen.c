/* util/json_gen.c — the JSON writer over yajl_gen (see json_gen.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_gen.h"

int an_jgen_init(struct an_jgen *j, bool beautify) {
  j->st = yajl_gen_status_ok;
  j->g = yajl_gen_alloc(NULL);
  if (!j->g) {
    j->st = yajl_gen_in_error_state;
    return -ENOMEM;
  }
  if (beautify) yajl_gen_config(j->g, yajl_gen_beautify, 1);
  return 0;
}

void an_jgen_indent(struct an_jgen *j, const char *indent) {
  if (!j->g) return;
  yajl_gen_config(j->g, yajl_gen_beautify, 1);
  if (!yajl_gen_config(j->g, yajl_gen_indent_string, indent)) {
    yajl_gen_config(j->g, yajl_gen_indent_string, "    ");   /* yajl left it NULL */
    an_jgen_check(j, yajl_gen_invalid_string);
  }
}

void an_jgen_validate_utf8(struct an_jgen *j) {
  if (j->g) yajl_gen_config(j->g, yajl_gen_validate_utf8, 1);
}

void an_jgen_check(struct an_jgen *j, yajl_gen_status s) {
  if (j->st == yajl_gen_status_ok) j->st = s;
}

/* Whether a write should go ahead: a generator, and nothing failed yet. */
static bool live(const struct an_jgen *j) { return j->g && j->st == yajl_gen_status_ok; }

void an_jgen_str(struct an_jgen *j, const char *s) {
  if (!live(j)) return;
  if (!s) { an_jgen_null(j); return; }
  an_jgen_check(j, yajl_gen_string(j->g, (const unsigned char *) s, strlen(s)));
}

void an_jgen_null(struct an_jgen *j) {
  if (live(j)) an_jgen_check(j, yajl_gen_null(j->g));
}

void an_jgen_bool(struct an_jgen *j, bool v) {
  if (live(j)) an_jgen_check(j, yajl_gen_bool(j->g, v));
}

void an_jgen_i64(struct an_jgen *j, int64_t v) {
  if (live(j)) an_jgen_check(j, yajl_gen_integer(j->g, (long long) v));
}

void an_jgen_u64(struct an_jgen *j, uint64_t v) {
  if (!live(j)) return;
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRIu64, v);
  an_jgen_check(j, yajl_gen_number(j->g, buf, (size_t) n));
}

void an_jgen_map_open(struct an_jgen *j) {
  if (live(j)) an_jgen_check(j, yajl_gen_map_open(j->g));
}

void an_jgen_map_close(struct an_jgen *j) {
  if (live(j)) an_jgen_check(j, yajl_gen_map_close(j->g));
}

void an_jgen_array_open(struct an_jgen *j) {
  if (live(j)) an_jgen_check(j, yajl_gen_array_open(j->g));
}

void an_jgen_array_close(struct an_jgen *j) {
  if (live(j)) an_jgen_check(j, yajl_gen_array_close(j->g));
}

void an_jgen_key(struct an_jgen *j, const char *k) { an_jgen_str(j, k); }

void an_jgen_kv_str(struct an_jgen *j, const char *k, const char *v) {
  an_jgen_key(j, k);
  an_jgen_str(j, v);
}

void an_jgen_kv_bool(struct an_jgen *j, const char *k, bool v) {
  an_jgen_key(j, k);
  an_jgen_bool(j, v);
}

void an_jgen_kv_i64(struct an_jgen *j, const char *k, int64_t v) {
  an_jgen_key(j, k);
  an_jgen_i64(j, v);
}

void an_jgen_kv_u64(struct an_jgen *j, const char *k, uint64_t v) {
  an_jgen_key(j, k);
  an_jgen_u64(j, v);
}

void an_jgen_kv_strv(struct an_jgen *j, const char *k, const char *const *v) {
  an_jgen_key(j, k);
  if (!v) { an_jgen_null(j); return; }
  an_jgen_array_open(j);
  for (; *v; v++) an_jgen_str(j, *v);
  an_jgen_array_close(j);
}

int an_jgen_finish(struct an_jgen *j, char **out, size_t *len) {
  if (!j->g) return -ENOMEM;
  const unsigned char *buf = NULL;
  size_t n = 0;
  if (j->st == yajl_gen_status_ok) an_jgen_check(j, yajl_gen_get_buf(j->g, &buf, &n));
  int r = j->st == yajl_gen_status_ok ? 0 : -EINVAL;
  char *doc = r == 0 ? malloc(n + 1) : NULL;
  if (r == 0 && !doc) r = -ENOMEM;
  if (doc) {
    memcpy(doc, buf, n);
    doc[n] = '\0';
    *out = doc;
    if (len) *len = n;
  }
  an_jgen_free(j);
  return r;
}

int an_jgen_write_file_at(struct an_jgen *j, int dirfd, const char *name, bool durable,
                          an_error_t *err) {
  cleanup_free char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(j, &doc, &len);
  if (r < 0) return an_error_set(err, -r, "%s: JSON", name);
  return an_write_file_atomic_at(dirfd, name, doc, len, durable, err);
}

void an_jgen_free(struct an_jgen *j) {
  if (j->g) yajl_gen_free(j->g);
  j->g = NULL;
}
