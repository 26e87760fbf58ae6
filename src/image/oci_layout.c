/* image/oci_layout.c — read an OCI image layout (image-spec
 * image-layout.md): oci-layout, index.json, then the chosen manifest
 * (manifest.md; nested image indexes are followed by platform) and its
 * config, all verified against their descriptors.  Accepts the OCI media
 * types and Docker image manifest v2 schema 2.  Produces an an_image_plan;
 * the layers themselves are verified while they are applied (layer.c). */
#include <errno.h>
#include <string.h>
#include "image/image_internal.h"
#include "util/cleanup.h"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define ANN_REF_NAME "org.opencontainers.image.ref.name"

bool an_layer_media_type_ok(const char *mt) {
  static const char *ok[] = {
      "application/vnd.oci.image.layer.v1.tar",
      "application/vnd.oci.image.layer.v1.tar+gzip",
      "application/vnd.oci.image.layer.v1.tar+zstd",
      "application/vnd.oci.image.layer.nondistributable.v1.tar",
      "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
      "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
      "application/vnd.docker.image.rootfs.diff.tar",
      "application/vnd.docker.image.rootfs.diff.tar.gzip",
      "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
      NULL};
  for (const char **m = ok; *m; m++)
    if (mt && !strcmp(mt, *m)) return true;
  return false;
}

void an_image_plan_clear(struct an_image_plan *p) {
  free(p->manifest);
  free(p->config);
  for (size_t i = 0; i < p->n_layers; i++) {
    free(p->layers[i].media_type);
    free(p->layers[i].path);
  }
  free(p->layers);
  an_strv_free(p->names);
  memset(p, 0, sizeof *p);
}

/* A descriptor's digest (validated, sha256 only) and size. */
static int descriptor(yajl_val d, const char *what, char digest[AN_DIGEST_SIZE], int64_t *size,
                      an_error_t *err) {
  const char *dg = an_json_member_str(d, "digest");
  yajl_val sz = an_json_member_type(d, "size", yajl_t_number);
  if (!dg) return an_error_set(err, EINVAL, "%s: descriptor without a digest", what);
  int r = an_digest_check(dg, NULL, err);
  if (r < 0) return an_error_prefix(err, "%s", what);
  if (!sz || !YAJL_IS_INTEGER(sz) || YAJL_GET_INTEGER(sz) < 0)
    return an_error_set(err, EINVAL, "%s %s: descriptor without a valid size", what, dg);
  snprintf(digest, AN_DIGEST_SIZE, "%s", dg);
  *size = YAJL_GET_INTEGER(sz);
  return 0;
}

static bool platform_is_host(yajl_val d) {
  yajl_val pl = an_json_member_type(d, "platform", yajl_t_object);
  if (!pl) return false;
  const char *os = an_json_member_str(pl, "os"), *arch = an_json_member_str(pl, "architecture");
  return os && arch && !strcmp(os, "linux") && !strcmp(arch, HOST_ARCH);
}

static bool is_index_type(const char *mt) {
  return mt && (!strcmp(mt, MT_OCI_INDEX) || !strcmp(mt, MT_DOCKER_LIST));
}

/* Pick one descriptor of an index's "manifests". */
static yajl_val choose(yajl_val manifests, const char *want_digest, const char *want_tag,
                       const char *where, an_error_t *err) {
  size_t n = manifests->u.array.len;
  if (n == 0) { an_error_set(err, EINVAL, "%s: no manifests", where); return NULL; }
  if (want_digest) {
    for (size_t i = 0; i < n; i++) {
      const char *dg = an_json_member_str(manifests->u.array.values[i], "digest");
      if (dg && !strcmp(dg, want_digest)) return manifests->u.array.values[i];
    }
    return NULL;   /* caller decides: descend or report a mismatch */
  }
  if (n == 1) return manifests->u.array.values[0];
  if (want_tag)
    for (size_t i = 0; i < n; i++) {
      yajl_val ann = an_json_member_type(manifests->u.array.values[i], "annotations", yajl_t_object);
      const char *ref = an_json_member_str(ann, ANN_REF_NAME);
      if (ref && !strcmp(ref, want_tag)) return manifests->u.array.values[i];
    }
  for (size_t i = 0; i < n; i++)
    if (platform_is_host(manifests->u.array.values[i])) return manifests->u.array.values[i];
  an_error_set(err, EINVAL, "%s: %zu manifests and none selected: give --name NAME:TAG or NAME@sha256:DIGEST",
               where, n);
  return NULL;
}

int an_oci_layout_plan(const struct an_image_source *s, const char *want_digest,
                       const char *want_ref, struct an_image_plan *p, an_error_t *err) {
  cleanup_free char *layout = NULL, *index = NULL;
  int r = an_source_read_blob(s, "oci-layout", NULL, -1, &layout, NULL, err);
  if (r < 0) return r;
  yajl_val lv = NULL;
  an_json_parse(layout, strlen(layout), "oci-layout", &lv, err);
  if (!lv) return an_error_prefix(err, "%s", s->path);
  bool ok = an_json_member_str(lv, "imageLayoutVersion") != NULL;
  yajl_tree_free(lv);
  if (!ok) return an_error_set(err, EINVAL, "%s: oci-layout has no imageLayoutVersion", s->path);
  r = an_source_read_blob(s, "index.json", NULL, -1, &index, NULL, err);
  if (r < 0) return r;

  const char *want_tag = NULL;
  if (want_ref) {
    const char *c = strrchr(want_ref, ':');
    want_tag = c && !strchr(c, '/') ? c + 1 : NULL;
  }
  cleanup_free char *doc = an_steal(&index);
  char where[AN_DIGEST_SIZE + 16] = "index.json";
  char top_ref[512] = "";
  for (int depth = 0;; depth++) {
    if (depth > 4) return an_error_set(err, EINVAL, "%s: image indexes nested too deep", s->path);
    yajl_val iv = NULL;
    an_json_parse(doc, strlen(doc), where, &iv, err);
    if (!iv) return an_error_prefix(err, "%s", s->path);
    yajl_val manifests = an_json_member_type(iv, "manifests", yajl_t_array);
    if (!manifests) {
      yajl_tree_free(iv);
      return an_error_set(err, EINVAL, "%s: %s has no \"manifests\" array", s->path, where);
    }
    yajl_val d = choose(manifests, want_digest, want_tag, where, err);
    if (!d && want_digest && !*err && manifests->u.array.len == 1 &&
        is_index_type(an_json_member_str(manifests->u.array.values[0], "mediaType")))
      d = manifests->u.array.values[0];         /* look for the digest one level down */
    if (!d) {
      yajl_tree_free(iv);
      if (*err) return an_error_prefix(err, "%s", s->path);
      return an_error_set(err, EINVAL, "%s: no manifest %s: the requested digest does not match the image",
                          s->path, want_digest);
    }
    char dg[AN_DIGEST_SIZE];
    int64_t size;
    const char *mt = an_json_member_str(d, "mediaType");
    r = descriptor(d, "manifest", dg, &size, err);
    if (r == 0 && depth == 0) {
      const char *ref = an_json_member_str(an_json_member_type(d, "annotations", yajl_t_object), ANN_REF_NAME);
      if (ref) snprintf(top_ref, sizeof top_ref, "%s", ref);
    }
    cleanup_free char *mt_copy = mt ? strdup(mt) : NULL;
    yajl_tree_free(iv);
    if (r < 0) return an_error_prefix(err, "%s", s->path);
    char hex[65];
    an_digest_check(dg, hex, NULL);
    char path[80];
    snprintf(path, sizeof path, "blobs/sha256/%s", hex);
    free(doc);
    doc = NULL;
    r = an_source_read_blob(s, path, dg, size, &doc, NULL, err);
    if (r < 0) return r;
    snprintf(where, sizeof where, "manifest %s", dg);
    if (is_index_type(mt_copy)) continue;
    if (mt_copy && strcmp(mt_copy, MT_OCI_MANIFEST) && strcmp(mt_copy, MT_DOCKER_MANIFEST))
      return an_error_set(err, ENOTSUP, "%s: manifest %s: unsupported media type %s", s->path, dg, mt_copy);
    /* a manifest whose own mediaType says "index" is an index */
    yajl_val mv = NULL;
    an_json_parse(doc, strlen(doc), where, &mv, err);
    if (!mv) return an_error_prefix(err, "%s", s->path);
    const char *own_mt = an_json_member_str(mv, "mediaType");
    if (is_index_type(own_mt) || (!own_mt && an_json_member_type(mv, "manifests", yajl_t_array))) {
      yajl_tree_free(mv);
      continue;
    }
    if (want_digest && strcmp(dg, want_digest)) {
      yajl_tree_free(mv);
      return an_error_set(err, EINVAL, "%s: requested digest %s does not match the image's manifest %s",
                          s->path, want_digest, dg);
    }
    memcpy(p->manifest_digest, dg, AN_DIGEST_SIZE);
    p->manifest_len = strlen(doc);
    p->manifest = an_steal(&doc);
    r = 0;
    yajl_val cfg = an_json_member_type(mv, "config", yajl_t_object);
    yajl_val layers = an_json_member_type(mv, "layers", yajl_t_array);
    char cdg[AN_DIGEST_SIZE];
    int64_t csize;
    if (!cfg || !layers)
      r = an_error_set(err, EINVAL, "manifest %s: no config or layers", dg);
    else if ((r = descriptor(cfg, "config", cdg, &csize, err)) == 0) {
      char chex[65], cpath[80];
      an_digest_check(cdg, chex, NULL);
      snprintf(cpath, sizeof cpath, "blobs/sha256/%s", chex);
      r = an_source_read_blob(s, cpath, cdg, csize, &p->config, &p->config_len, err);
    }
    size_t n = layers ? layers->u.array.len : 0;
    if (r == 0 && !(p->layers = calloc(n + 1, sizeof *p->layers)))
      r = an_error_set(err, ENOMEM, "layers");
    for (size_t i = 0; r == 0 && i < n; i++) {
      yajl_val l = layers->u.array.values[i];
      struct an_layer_desc *ld = &p->layers[p->n_layers];
      const char *lmt = an_json_member_str(l, "mediaType");
      if (!an_layer_media_type_ok(lmt)) {
        r = an_error_set(err, ENOTSUP, "layer %zu: unsupported media type %s", i, lmt ? lmt : "(none)");
        break;
      }
      if ((r = descriptor(l, "layer", ld->digest, &ld->size, err)) < 0) break;
      char lhex[65];
      an_digest_check(ld->digest, lhex, NULL);
      ld->media_type = strdup(lmt);
      if (asprintf(&ld->path, "blobs/sha256/%s", lhex) < 0) ld->path = NULL;
      p->n_layers++;
      if (!ld->media_type || !ld->path) r = an_error_set(err, ENOMEM, "layers");
    }
    yajl_tree_free(mv);
    if (r < 0) return an_error_prefix(err, "%s", s->path);
    /* the layout's own name for it (org.opencontainers.image.ref.name), when
     * it is a valid image name: "python" -> "python:latest" */
    p->names = calloc(2, sizeof *p->names);
    if (!p->names) return an_error_set(err, ENOMEM, "names");
    char rd[AN_DIGEST_SIZE];
    if (*top_ref && an_image_ref_parse(top_ref, &p->names[0], rd, NULL) < 0) p->names[0] = NULL;
    return 0;
  }
}
