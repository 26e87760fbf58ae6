/* cli/oci/json.c — printing documents written with util/json_gen, and
 * re-indenting a document through yajl_tree (runc prints `state` and
 * `features` indented by two spaces, as Go's json.MarshalIndent). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "cli/oci/oci.h"
#include "util/cleanup.h"

int oci_json_init(struct an_jgen *j, bool pretty) {
  int r = an_jgen_init(j, false);
  if (r == 0 && pretty) an_jgen_indent(j, "  ");
  return r;
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

int oci_json_print(struct an_jgen *j) {
  cleanup_free char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(j, &doc, &len);
  if (r < 0) return r;
  write_collapsed((const unsigned char *) doc, len, stdout);
  if (len == 0 || doc[len - 1] != '\n') fputc('\n', stdout);
  return fflush(stdout) == 0 ? 0 : -EIO;
}

static void emit(struct an_jgen *j, yajl_val v) {
  if (YAJL_IS_STRING(v)) an_jgen_str(j, YAJL_GET_STRING(v));
  else if (YAJL_IS_NUMBER(v))   /* the number's own text, as parsed */
    an_jgen_check(j, yajl_gen_number(j->g, YAJL_GET_NUMBER(v), strlen(YAJL_GET_NUMBER(v))));
  else if (YAJL_IS_TRUE(v)) an_jgen_bool(j, true);
  else if (YAJL_IS_FALSE(v)) an_jgen_bool(j, false);
  else if (YAJL_IS_OBJECT(v)) {
    an_jgen_map_open(j);
    for (size_t i = 0; i < v->u.object.len; i++) {
      an_jgen_key(j, v->u.object.keys[i]);
      emit(j, v->u.object.values[i]);
    }
    an_jgen_map_close(j);
  } else if (YAJL_IS_ARRAY(v)) {
    an_jgen_array_open(j);
    for (size_t i = 0; i < v->u.array.len; i++) emit(j, v->u.array.values[i]);
    an_jgen_array_close(j);
  } else
    an_jgen_null(j);
}

int oci_json_reprint(const char *json, FILE *out, an_error_t *err) {
  char msg[256] = "";
  yajl_val v = yajl_tree_parse(json, msg, sizeof msg);
  if (!v) return an_error_set(err, EINVAL, "parse JSON: %s", msg);
  cleanup_jgen struct an_jgen j;
  if (oci_json_init(&j, true) < 0) { yajl_tree_free(v); return an_error_set(err, ENOMEM, "re-indent JSON"); }
  emit(&j, v);
  yajl_tree_free(v);
  cleanup_free char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(&j, &doc, &len);
  if (r < 0) return an_error_set(err, -r, "re-indent JSON");
  write_collapsed((const unsigned char *) doc, len, out);
  if (len && doc[len - 1] != '\n') fputc('\n', out);
  return 0;
}
