/* image/manifest_gen.c — synthesise an OCI-shaped manifest for sources that
 * have none (docker-archive, rootfs tar), with yajl_gen, so that every stored
 * image has a manifest.json and a manifest digest as its id.  Same input ->
 * same bytes -> same digest (import is idempotent). */
#include <errno.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include "image/image_internal.h"

#define S(g, s) yajl_gen_string(g, (const unsigned char *) (s), strlen(s))

int an_manifest_synthesize(struct an_image_plan *p, const char *config_media_type,
                           an_error_t *err) {
  char cdg[AN_DIGEST_SIZE];
  int r = an_digest_buffer(p->config, p->config_len, "image config", cdg, err);
  if (r < 0) return r;
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) return an_error_set(err, ENOMEM, "yajl_gen_alloc");
  yajl_gen_map_open(g);
  S(g, "schemaVersion"); yajl_gen_integer(g, 2);
  S(g, "mediaType"); S(g, "application/vnd.oci.image.manifest.v1+json");
  S(g, "config");
  yajl_gen_map_open(g);
  S(g, "mediaType"); S(g, config_media_type);
  S(g, "digest"); S(g, cdg);
  S(g, "size"); yajl_gen_integer(g, (long long) p->config_len);
  yajl_gen_map_close(g);
  S(g, "layers");
  yajl_gen_array_open(g);
  for (size_t i = 0; i < p->n_layers; i++) {
    yajl_gen_map_open(g);
    S(g, "mediaType"); S(g, p->layers[i].media_type);
    S(g, "digest"); S(g, p->layers[i].digest);
    S(g, "size"); yajl_gen_integer(g, p->layers[i].size);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok || !(p->manifest = strndup((const char *) buf, len)))
    r = an_error_set(err, ENOMEM, "manifest");
  else {
    p->manifest_len = len;
    r = an_digest_buffer(p->manifest, len, "manifest", p->manifest_digest, err);
  }
  yajl_gen_free(g);
  return r;
}
