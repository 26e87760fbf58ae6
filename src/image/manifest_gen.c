/* image/manifest_gen.c — synthesise an OCI-shaped manifest for sources that
 * have none (docker-archive, rootfs tar), with util/json_gen, so that every stored
 * image has a manifest.json and a manifest digest as its id.  Same input ->
 * same bytes -> same digest (import is idempotent). */
#include <errno.h>
#include <string.h>
#include "image/image_internal.h"
#include "util/json_gen.h"

int an_manifest_synthesize(struct an_image_plan *p, const char *config_media_type,
                           an_error_t *err) {
  char cdg[AN_DIGEST_SIZE];
  int r = an_digest_buffer(p->config, p->config_len, "image config", cdg, err);
  if (r < 0) return r;
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "synthesised manifest: JSON");
  an_jgen_map_open(&j);
  an_jgen_kv_i64(&j, "schemaVersion", 2);
  an_jgen_kv_str(&j, "mediaType", "application/vnd.oci.image.manifest.v1+json");
  an_jgen_key(&j, "config");
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "mediaType", config_media_type);
  an_jgen_kv_str(&j, "digest", cdg);
  an_jgen_kv_u64(&j, "size", p->config_len);
  an_jgen_map_close(&j);
  an_jgen_key(&j, "layers");
  an_jgen_array_open(&j);
  for (size_t i = 0; i < p->n_layers; i++) {
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "mediaType", p->layers[i].media_type);
    an_jgen_kv_str(&j, "digest", p->layers[i].digest);
    an_jgen_kv_i64(&j, "size", p->layers[i].size);
    an_jgen_map_close(&j);
  }
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  r = an_jgen_finish(&j, &p->manifest, &p->manifest_len);
  if (r < 0) return an_error_set(err, -r, "synthesised manifest: JSON");
  return an_digest_buffer(p->manifest, p->manifest_len, "manifest", p->manifest_digest, err);
}
