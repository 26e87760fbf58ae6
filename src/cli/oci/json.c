/* cli/oci/json.c — JSON output helpers over yajl_gen, and re-indenting a
 * document through yajl_tree (runc prints `state` and `features` indented by
 * two spaces, as Go's json.MarshalIndent). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "cli/oci/oci.h"

yajl_gen oci_json_gen(bool pretty) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) return NULL;
  if (pretty) {
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_indent_string, "  ");
  }
  return g;
}

void oci_json_str(yajl_gen g, const char *s) {
  if (!s) s = "";
  yajl_gen_string(g, (const unsigned char *) s, strlen(s));
}

void oci_json_key(yajl_gen g, const char *k) { oci_json_str(g, k); }

void oci_json_kv_str(yajl_gen g, const char *k, const char *v) {
  oci_json_str(g, k);
  oci_json_str(g, v);
}

void oci_json_kv_int(yajl_gen g, const char *k, long long v) {
  oci_json_str(g, k);
  yajl_gen_integer(g, v);
}

void oci_json_kv_bool(yajl_gen g, const char *k, bool v) {
  oci_json_str(g, k);
  yajl_gen_bool(g, v);
}

void oci_json_str_array(yajl_gen g, const char *k, const char *const *v) {
  oci_json_str(g, k);
  yajl_gen_array_open(g);
  for (; v && *v; v++) oci_json_str(g, *v);
  yajl_gen_array_close(g);
}

/* yajl's beautifier writes an empty array or map as "[\n\n<indent>]"; Go
 * (runc) writes "[]".  Raw newlines only come from the beautifier (yajl
 * escapes them inside strings), so collapsing that pattern is safe. */
static void write_collapsed(const unsigned char *buf, size_t len, FILE *out) {
  for (size_t i = 0; i < len; i++) {
    fputc(buf[i], out);
    if ((buf[i] == '[' || buf[i] == '{') && i + 2 < len && buf[i + 1] == '\n' && buf[i + 2] == '\n') {
      size_t j = i + 3;
      while (j < len && buf[j] == ' ') j++;
      if (j < len && buf[j] == (buf[i] == '[' ? ']' : '}')) {
        fputc(buf[j], out);
        i = j;
      }
    }
  }
}

int oci_json_print(yajl_gen g) {
  const unsigned char *buf;
  size_t len;
  if (!g || yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok) {
    if (g) yajl_gen_free(g);
    return -EINVAL;
  }
  write_collapsed(buf, len, stdout);
  if (len == 0 || buf[len - 1] != '\n') fputc('\n', stdout);
  yajl_gen_free(g);
  return fflush(stdout) == 0 ? 0 : -EIO;
}

static void emit(yajl_gen g, yajl_val v) {
  if (YAJL_IS_STRING(v)) oci_json_str(g, YAJL_GET_STRING(v));
  else if (YAJL_IS_NUMBER(v)) yajl_gen_number(g, YAJL_GET_NUMBER(v), strlen(YAJL_GET_NUMBER(v)));
  else if (YAJL_IS_TRUE(v)) yajl_gen_bool(g, 1);
  else if (YAJL_IS_FALSE(v)) yajl_gen_bool(g, 0);
  else if (YAJL_IS_OBJECT(v)) {
    yajl_gen_map_open(g);
    for (size_t i = 0; i < v->u.object.len; i++) {
      oci_json_str(g, v->u.object.keys[i]);
      emit(g, v->u.object.values[i]);
    }
    yajl_gen_map_close(g);
  } else if (YAJL_IS_ARRAY(v)) {
    yajl_gen_array_open(g);
    for (size_t i = 0; i < v->u.array.len; i++) emit(g, v->u.array.values[i]);
    yajl_gen_array_close(g);
  } else
    yajl_gen_null(g);
}

int oci_json_reprint(const char *json, FILE *out, an_error_t *err) {
  char msg[256] = "";
  yajl_val v = yajl_tree_parse(json, msg, sizeof msg);
  if (!v) return an_error_set(err, EINVAL, "parse JSON: %s", msg);
  yajl_gen g = oci_json_gen(true);
  if (!g) { yajl_tree_free(v); return an_error_set(err, ENOMEM, "yajl_gen_alloc"); }
  emit(g, v);
  yajl_tree_free(v);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  write_collapsed(buf, len, out);
  if (len && buf[len - 1] != '\n') fputc('\n', out);
  yajl_gen_free(g);
  return 0;
}
