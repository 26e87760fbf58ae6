/* image/rootfs_tar.c — a plain root filesystem tar (optionally compressed)
 * becomes a one-layer image: the tar is hashed first (its digest is the
 * layer's, and the image id must be known before unpacking for idempotent
 * imports), and a minimal image config is synthesised (os linux, the host
 * architecture, a default PATH).  Note: rootfs.diff_ids holds the tar's own
 * digest, which is the uncompressed digest only for an uncompressed tar. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/json_gen.h"

int an_rootfs_tar_plan(const struct an_image_source *s, struct an_image_plan *p,
                       an_error_t *err) {
  int fd = an_source_open_file(s, NULL, err);
  if (fd < 0) return fd;
  struct an_sha256 *h = an_sha256_new();
  char *buf = malloc(1 << 20);
  unsigned char magic[4] = {0};
  uint64_t total = 0;
  int r = 0;
  if (!h || !buf) r = an_error_set(err, ENOMEM, "sha256");
  while (r == 0) {
    ssize_t n = read(fd, buf, 1 << 20);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { r = an_error_set(err, errno, "read %s", s->path); break; }
    if (n == 0) break;
    if (total == 0 && n >= 4) memcpy(magic, buf, 4);
    if (an_sha256_update(h, buf, (size_t) n) < 0) { r = an_error_set(err, EIO, "sha256 of %s", s->path); break; }
    total += (uint64_t) n;
  }
  close(fd);
  free(buf);
  if (r < 0) { an_sha256_free(h); return r; }
  char dg[AN_DIGEST_SIZE];
  r = an_digest_finish(h, dg);
  if (r < 0) return an_error_set(err, -r, "sha256 of %s", s->path);
  const char *mt = magic[0] == 0x1f && magic[1] == 0x8b ? "application/vnd.oci.image.layer.v1.tar+gzip"
                 : magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd
                     ? "application/vnd.oci.image.layer.v1.tar+zstd"
                     : "application/vnd.oci.image.layer.v1.tar";
  if (!(p->layers = calloc(1, sizeof *p->layers)) || !(p->layers[0].media_type = strdup(mt)))
    return an_error_set(err, ENOMEM, "layers");
  p->n_layers = 1;
  memcpy(p->layers[0].digest, dg, AN_DIGEST_SIZE);
  p->layers[0].size = (int64_t) total;
  p->layers[0].path = NULL;   /* the source file itself */

  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "image config of %s: JSON", s->path);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "architecture", HOST_ARCH);
  an_jgen_kv_str(&j, "os", "linux");
  an_jgen_key(&j, "config");
  an_jgen_map_open(&j);
  an_jgen_key(&j, "Env");
  an_jgen_array_open(&j);
  an_jgen_str(&j, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  an_jgen_key(&j, "rootfs");
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "type", "layers");
  an_jgen_key(&j, "diff_ids");
  an_jgen_array_open(&j);
  an_jgen_str(&j, dg);
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  an_jgen_map_close(&j);
  r = an_jgen_finish(&j, &p->config, &p->config_len);
  if (r < 0) return an_error_set(err, -r, "image config of %s: JSON", s->path);
  if (!(p->names = calloc(1, sizeof *p->names)))
    return an_error_set(err, ENOMEM, "image names of %s", s->path);
  return an_manifest_synthesize(p, "application/vnd.oci.image.config.v1+json", err);
}
