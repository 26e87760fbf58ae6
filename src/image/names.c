/* image/names.c — image names (NAME[:TAG][@sha256:HEX]) and the store's
 * names index, <root>/images/names.json: {"names": {"NAME:TAG": "sha256:HEX"}},
 * rewritten atomically (temp file, fsync, rename) under .names.lock. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include "image/image_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

int an_image_ref_parse(const char *name, char **ref, char digest[AN_DIGEST_SIZE],
                       an_error_t *err) {
  *ref = NULL;
  digest[0] = '\0';
  size_t len = strlen(name);
  if (!len || len > 255) return an_error_set(err, EINVAL, "image name \"%.255s\": empty or longer than 255 bytes", name);
  if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:@-") != len)
    return an_error_set(err, EINVAL, "image name \"%s\": only [A-Za-z0-9._/:@-] allowed", name);
  if (!strncmp(name, "sha256:", 7))
    return an_error_set(err, EINVAL, "image name \"%s\": a digest is not a name (use NAME@sha256:HEX)", name);
  const char *at = strchr(name, '@');
  if (at) {
    if (an_digest_check(at + 1, NULL, err) < 0) return an_error_prefix(err, "image name \"%s\"", name);
    snprintf(digest, AN_DIGEST_SIZE, "%s", at + 1);
  }
  size_t nl = at ? (size_t) (at - name) : len;
  if (!nl) return 0;
  if (name[0] == '.' || name[0] == '-' || name[0] == '/' || name[nl - 1] == ':' || name[nl - 1] == '/')
    return an_error_set(err, EINVAL, "image name \"%s\": malformed", name);
  const char *colon = memrchr(name, ':', nl);
  const char *slash = memrchr(name, '/', nl);
  bool has_tag = colon && (!slash || colon > slash);
  if (asprintf(ref, "%.*s%s", (int) nl, name, has_tag ? "" : ":latest") < 0) {
    *ref = NULL;
    return an_error_set(err, ENOMEM, "image name");
  }
  return 0;
}

void an_names_clear(struct an_names *n) {
  for (size_t i = 0; i < n->n; i++) {
    free(n->names[i]);
    free(n->digests[i]);
  }
  free(n->names);
  free(n->digests);
  memset(n, 0, sizeof *n);
}

int an_names_set(struct an_names *n, const char *ref, const char *digest) {
  for (size_t i = 0; i < n->n; i++)
    if (!strcmp(n->names[i], ref)) {
      char *d = strdup(digest);
      if (!d) return -ENOMEM;
      free(n->digests[i]);
      n->digests[i] = d;
      return 0;
    }
  char **nn = realloc(n->names, (n->n + 1) * sizeof *nn);
  if (!nn) return -ENOMEM;
  n->names = nn;
  char **nd = realloc(n->digests, (n->n + 1) * sizeof *nd);
  if (!nd) return -ENOMEM;
  n->digests = nd;
  n->names[n->n] = strdup(ref);
  n->digests[n->n] = strdup(digest);
  if (!n->names[n->n] || !n->digests[n->n]) {
    free(n->names[n->n]);
    free(n->digests[n->n]);
    return -ENOMEM;
  }
  n->n++;
  return 0;
}

bool an_names_del(struct an_names *n, const char *ref) {
  for (size_t i = 0; i < n->n; i++)
    if (!strcmp(n->names[i], ref)) {
      free(n->names[i]);
      free(n->digests[i]);
      n->n--;
      n->names[i] = n->names[n->n];
      n->digests[i] = n->digests[n->n];
      return true;
    }
  return false;
}

const char *an_names_get(const struct an_names *n, const char *ref) {
  for (size_t i = 0; i < n->n; i++)
    if (!strcmp(n->names[i], ref)) return n->digests[i];
  return NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

char **an_names_for(const struct an_names *n, const char *digest) {
  char **v = calloc(n->n + 1, sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n->n; i++)
    if (!strcmp(n->digests[i], digest) && !(v[k++] = strdup(n->names[i]))) {
      an_strv_free(v);
      return NULL;
    }
  qsort(v, k, sizeof *v, cmp_str);
  return v;
}

int an_names_load(int imagesfd, struct an_names *n, an_error_t *err) {
  memset(n, 0, sizeof *n);
  cleanup_free char *buf = NULL;
  an_error_t e = NULL;
  int r = an_read_file_at(imagesfd, "names.json", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, 64u << 20,
                          &buf, NULL, &e);
  if (r == -ENOENT) { an_error_free(&e); return 0; }
  if (r < 0) { *err = e; return r; }
  yajl_val v = NULL;
  an_json_parse(buf, strlen(buf), "names.json", &v, err);
  if (!v) return -EINVAL;
  yajl_val m = an_json_member_type(v, "names", yajl_t_object);
  r = 0;
  for (size_t i = 0; m && i < m->u.object.len && r == 0; i++) {
    yajl_val d = m->u.object.values[i];
    if (YAJL_IS_STRING(d) && an_digest_check(d->u.string, NULL, NULL) == 0 &&
        an_names_set(n, m->u.object.keys[i], d->u.string) < 0)
      r = an_error_set(err, ENOMEM, "names.json");
  }
  yajl_tree_free(v);
  if (r < 0) an_names_clear(n);
  return r;
}

int an_names_save(int imagesfd, const struct an_names *n, an_error_t *err) {
  cleanup_free size_t *order = calloc(n->n + 1, sizeof *order);
  if (!order) return an_error_set(err, ENOMEM, "names.json");
  for (size_t i = 0; i < n->n; i++) order[i] = i;
  for (size_t i = 1; i < n->n; i++)         /* insertion sort by name: stable output */
    for (size_t j = i; j > 0 && strcmp(n->names[order[j - 1]], n->names[order[j]]) > 0; j--) {
      size_t t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
    }
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "names.json: JSON");
  an_jgen_map_open(&j);
  an_jgen_key(&j, "names");
  an_jgen_map_open(&j);
  for (size_t i = 0; i < n->n; i++) an_jgen_kv_str(&j, n->names[order[i]], n->digests[order[i]]);
  an_jgen_map_close(&j);
  an_jgen_map_close(&j);
  return an_jgen_write_file_at(&j, imagesfd, "names.json", true, err);
}
