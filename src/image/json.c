/* image/json.c — small helpers over yajl_tree for the image JSON documents
 * (index.json, manifests, configs, docker manifest.json, the store's own
 * files), over util/json_tree.c's bounded parser.  Parsing only; output
 * is written with yajl_gen where it is made. */
#include <errno.h>
#include <string.h>
#include "image/image_internal.h"
#include "util/json_tree.h"

yajl_val an_img_json_parse(const char *buf, const char *what, an_error_t *err) {
  /* bounded parse (size, depth, value count, duplicate keys): util/json_tree.c */
  yajl_val v = NULL;
  if (an_json_parse(buf, strlen(buf), what, &v, err) < 0) return NULL;
  return v;
}

yajl_val an_img_json_get(yajl_val obj, const char *key, yajl_type type) {
  if (!obj || !YAJL_IS_OBJECT(obj)) return NULL;
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (!strcmp(obj->u.object.keys[i], key)) {
      yajl_val v = obj->u.object.values[i];
      if (type == yajl_t_any || (v && v->type == type)) return v;
      if (type == yajl_t_number && v && YAJL_IS_NUMBER(v)) return v;
      return NULL;
    }
  return NULL;
}

const char *an_img_json_str(yajl_val obj, const char *key) {
  yajl_val v = an_img_json_get(obj, key, yajl_t_string);
  return v ? v->u.string : NULL;
}

char **an_img_json_strv(yajl_val arr, bool *bad) {
  if (!arr || !YAJL_IS_ARRAY(arr)) return NULL;
  size_t n = arr->u.array.len;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) { if (bad) *bad = true; return NULL; }
  for (size_t i = 0; i < n; i++) {
    yajl_val e = arr->u.array.values[i];
    if (!YAJL_IS_STRING(e) || !(v[i] = strdup(e->u.string))) {
      an_img_strv_free(v);
      if (bad) *bad = true;
      return NULL;
    }
  }
  return v;
}

void an_img_strv_free(char **v) {
  if (!v) return;
  for (char **s = v; *s; s++) free(*s);
  free(v);
}

size_t an_img_strv_len(char *const *v) {
  size_t n = 0;
  while (v && v[n]) n++;
  return n;
}
