/* util/json_tree.c — bounded yajl tree parsing and path-naming typed
 * accessors (see util/json_tree.h).
 *
 * Parsing is two passes over the same bytes: a yajl event pass that
 * enforces the size, depth and value-count caps and rejects NUL in strings
 * (yajl_tree keeps strings as C strings and would silently truncate them),
 * then yajl_tree_parse.  The caps matter because yajl_tree_free recurses
 * and every value costs a heap allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_tree.h"

int an_json_error(an_error_t *err, const char *path, const char *fmt, ...) {
  cleanup_free char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&msg, fmt, ap);
  va_end(ap);
  if (n < 0) return an_error_set(err, ENOMEM, "%s", path);
  if (err && *err) return -EINVAL;        /* first cause wins */
  if (path && *path)
    an_error_set(err, 0, "%s: %s", path, msg);
  else
    an_error_set(err, 0, "%s", msg);
  if (err && *err && (*err)->errnum == 0) (*err)->errnum = EINVAL;
  return -EINVAL;
}

/* buf = a b c (NULL parts skipped), cut at AN_JSON_PATH_MAX - 1 bytes as
 * snprintf would.  Not snprintf: the parsers name the path of every member
 * they visit (check_duplicates walks a whole document), and its format
 * parsing was a quarter of the CPU of loading a container's config.json. */
static const char *path_put(char *buf, const char *a, const char *b, const char *c) {
  const char *part[3] = {a, b, c};
  size_t n = 0;
  for (int k = 0; k < 3; k++) {
    if (!part[k]) continue;
    size_t l = strlen(part[k]);
    if (l > AN_JSON_PATH_MAX - 1 - n) l = AN_JSON_PATH_MAX - 1 - n;
    memmove(buf + n, part[k], l);   /* a may be buf itself */
    n += l;
  }
  buf[n] = 0;
  return buf;
}

const char *an_json_path_key(char *buf, const char *parent, const char *key) {
  if (!key) key = "(null)";
  if (parent && *parent) return path_put(buf, parent, ".", key);
  return path_put(buf, key, NULL, NULL);
}

const char *an_json_path_index(char *buf, const char *parent, size_t i) {
  char idx[24], *q = idx + sizeof idx;
  *--q = 0;
  *--q = ']';
  do *--q = (char) ('0' + i % 10); while (i /= 10);
  *--q = '[';
  return path_put(buf, parent ? parent : "", q, NULL);
}

/* ---- first pass: limits ------------------------------------------------ */

struct limit_state {
  unsigned depth;
  size_t values;
  const char *violation;   /* static text when a callback stopped the parse */
};

static int count_value(struct limit_state *s) {
  if (++s->values > AN_JSON_MAX_VALUES) {
    s->violation = "more than 1000000 JSON values";
    return 0;
  }
  return 1;
}
static int lim_null(void *ctx) { return count_value(ctx); }
static int lim_bool(void *ctx, int b) { (void) b; return count_value(ctx); }
static int lim_number(void *ctx, const char *s, size_t l) {
  (void) s; (void) l;
  return count_value(ctx);
}
static int lim_string(void *ctx, const unsigned char *s, size_t l) {
  struct limit_state *st = ctx;
  if (memchr(s, 0, l)) { st->violation = "string contains U+0000"; return 0; }
  return count_value(ctx);
}
static int lim_key(void *ctx, const unsigned char *s, size_t l) {
  struct limit_state *st = ctx;
  if (memchr(s, 0, l)) { st->violation = "object key contains U+0000"; return 0; }
  return 1;
}
static int lim_open(void *ctx) {
  struct limit_state *s = ctx;
  if (++s->depth > AN_JSON_MAX_DEPTH) {
    s->violation = "nesting deeper than 64 levels";
    return 0;
  }
  return count_value(ctx);
}
static int lim_close(void *ctx) { ((struct limit_state *) ctx)->depth--; return 1; }

static const yajl_callbacks limit_callbacks = {
  .yajl_null = lim_null, .yajl_boolean = lim_bool, .yajl_number = lim_number,
  .yajl_string = lim_string, .yajl_start_map = lim_open, .yajl_map_key = lim_key,
  .yajl_end_map = lim_close, .yajl_start_array = lim_open, .yajl_end_array = lim_close,
};

static int check_limits(const char *json, size_t len, const char *what, an_error_t *err) {
  struct limit_state st = {0};
  yajl_handle h = yajl_alloc(&limit_callbacks, NULL, &st);
  if (!h) return an_error_set(err, ENOMEM, "parse JSON");
  yajl_status s = yajl_parse(h, (const unsigned char *) json, len);
  if (s == yajl_status_ok) s = yajl_complete_parse(h);
  int ret = 0;
  if (s != yajl_status_ok) {
    size_t at = yajl_get_bytes_consumed(h);
    if (st.violation) {
      ret = an_json_error(err, what, "%s", st.violation);
    } else {
      unsigned char *m = yajl_get_error(h, 0, (const unsigned char *) json, len);
      cleanup_free char *msg = strdup(m ? (const char *) m : "parse error");
      if (m) yajl_free_error(h, m);
      if (!msg) { yajl_free(h); return an_error_set(err, ENOMEM, "parse JSON"); }
      size_t n = strlen(msg);
      while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ' || msg[n - 1] == '.')) msg[--n] = 0;
      ret = an_json_error(err, what, "invalid JSON near byte %zu: %s", at, msg);
    }
  }
  yajl_free(h);
  return ret;
}

/* ---- duplicate keys ---------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int check_duplicates(yajl_val v, const char *path, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  if (YAJL_IS_OBJECT(v)) {
    size_t n = v->u.object.len;
    if (n > 1) {
      cleanup_free const char **keys = malloc(n * sizeof *keys);
      if (!keys) return an_error_set(err, ENOMEM, "parse %s", path);
      memcpy(keys, v->u.object.keys, n * sizeof *keys);
      qsort(keys, n, sizeof *keys, cmp_str);
      for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
          return an_json_error(err, path, "duplicate key \"%s\"", keys[i]);
    }
    for (size_t i = 0; i < n; i++) {
      int r = check_duplicates(v->u.object.values[i],
                               an_json_path_key(sub, path, v->u.object.keys[i]), err);
      if (r < 0) return r;
    }
  } else if (YAJL_IS_ARRAY(v)) {
    for (size_t i = 0; i < v->u.array.len; i++) {
      int r = check_duplicates(v->u.array.values[i], an_json_path_index(sub, path, i), err);
      if (r < 0) return r;
    }
  }
  return 0;
}

int an_json_parse(const char *json, size_t len, const char *what, yajl_val *out,
                  an_error_t *err) {
  if (len > AN_JSON_MAX_BYTES) {
    an_json_error(err, what, "document larger than 16 MiB (%zu bytes)", len);
    if (err && *err && (*err)->errnum == EINVAL) (*err)->errnum = EFBIG;
    return -EFBIG;
  }
  int r = check_limits(json, len, what, err);
  if (r < 0) return r;
  /* yajl_tree_parse wants a NUL-terminated string; the first pass proved
   * there is no NUL byte inside the document. */
  cleanup_free char *copy = malloc(len + 1);
  if (!copy) return an_error_set(err, ENOMEM, "parse JSON");
  memcpy(copy, json, len);
  copy[len] = 0;
  char errbuf[256] = "";
  yajl_val tree = yajl_tree_parse(copy, errbuf, sizeof errbuf);
  if (!tree) {
    errbuf[strcspn(errbuf, "\n")] = 0;
    return an_json_error(err, what, "invalid JSON: %s", *errbuf ? errbuf : "out of memory");
  }
  r = check_duplicates(tree, "", err);
  if (r < 0) { yajl_tree_free(tree); return r; }
  *out = tree;
  return 0;
}

/* ---- accessors --------------------------------------------------------- */

yajl_val an_json_member(yajl_val v, const char *key) {
  if (!YAJL_IS_OBJECT(v)) return NULL;
  for (size_t i = 0; i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return YAJL_IS_NULL(v->u.object.values[i]) ? NULL : v->u.object.values[i];
  return NULL;
}

yajl_val an_json_member_type(yajl_val v, const char *key, yajl_type type) {
  yajl_val m = an_json_member(v, key);
  return m && (type == yajl_t_any || m->type == type) ? m : NULL;
}

const char *an_json_member_str(yajl_val v, const char *key) {
  yajl_val m = an_json_member_type(v, key, yajl_t_string);
  return m ? m->u.string : NULL;
}

int an_json_want_object(yajl_val v, const char *path, an_error_t *err) {
  return YAJL_IS_OBJECT(v) ? 0 : an_json_error(err, path, "must be an object");
}

int an_json_want_array(yajl_val v, const char *path, an_error_t *err) {
  return YAJL_IS_ARRAY(v) ? 0 : an_json_error(err, path, "must be an array");
}

int an_json_get_bool(yajl_val v, const char *path, bool *out, an_error_t *err) {
  if (YAJL_IS_TRUE(v)) { *out = true; return 0; }
  if (YAJL_IS_FALSE(v)) { *out = false; return 0; }
  return an_json_error(err, path, "must be a boolean");
}

int an_json_get_string(yajl_val v, const char *path, char **out, an_error_t *err) {
  if (!YAJL_IS_STRING(v)) return an_json_error(err, path, "must be a string");
  char *s = strdup(v->u.string);
  if (!s) return an_error_set(err, ENOMEM, "%s", path);
  *out = s;
  return 0;
}

/* The number's text if it is written as an integer, else NULL. */
static const char *integer_text(yajl_val v) {
  const char *t = YAJL_GET_NUMBER(v);
  if (!t || !*t) return NULL;
  if (strpbrk(t, ".eE")) return NULL;
  return t;
}

int an_json_get_u64(yajl_val v, const char *path, uint64_t max, uint64_t *out,
                    an_error_t *err) {
  if (!YAJL_IS_NUMBER(v)) return an_json_error(err, path, "must be a number");
  const char *t = integer_text(v);
  if (!t) return an_json_error(err, path, "must be an integer, not %s", YAJL_GET_NUMBER(v));
  if (t[0] == '-') {
    if (strspn(t + 1, "0") == strlen(t + 1)) { *out = 0; return 0; }  /* "-0" */
    return an_json_error(err, path, "must not be negative (%s)", t);
  }
  errno = 0;
  char *end = NULL;
  unsigned long long x = strtoull(t, &end, 10);
  if (errno == ERANGE || x > max)
    return an_json_error(err, path, "%s is out of range (0..%" PRIu64 ")", t, max);
  if (errno || !end || *end) return an_json_error(err, path, "must be an integer, not %s", t);
  *out = x;
  return 0;
}

int an_json_get_i64(yajl_val v, const char *path, int64_t min, int64_t max,
                    int64_t *out, an_error_t *err) {
  if (!YAJL_IS_NUMBER(v)) return an_json_error(err, path, "must be a number");
  const char *t = integer_text(v);
  if (!t) return an_json_error(err, path, "must be an integer, not %s", YAJL_GET_NUMBER(v));
  errno = 0;
  char *end = NULL;
  long long x = strtoll(t, &end, 10);
  if (errno == ERANGE || x < min || x > max)
    return an_json_error(err, path, "%s is out of range (%" PRId64 "..%" PRId64 ")", t, min,
                         max);
  if (errno || !end || *end) return an_json_error(err, path, "must be an integer, not %s", t);
  *out = x;
  return 0;
}

int an_json_get_strv(yajl_val v, const char *path, char ***out, an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  size_t n = v->u.array.len;
  cleanup_strv char **strv = calloc(n + 1, sizeof *strv);
  if (!strv) return an_error_set(err, ENOMEM, "%s", path);
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < n; i++) {
    r = an_json_get_string(v->u.array.values[i], an_json_path_index(sub, path, i), &strv[i], err);
    if (r < 0) return r;
  }
  *out = an_steal(&strv);
  return 0;
}

int an_json_read_file(const char *path, char **out, size_t *out_len, an_error_t *err) {
  return an_read_file_at(AT_FDCWD, path, 0, AN_JSON_MAX_BYTES, out, out_len, err);
}
