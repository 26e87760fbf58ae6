/* image/docker_archive.c — read a `docker save` / `podman save` archive
 * (already extracted by archive_source.c): manifest.json names the config
 * and the layers.  The format has no descriptors, so verification is:
 * the config's sha256 must equal its file name ("<hex>.json" or
 * "blobs/sha256/<hex>"), and each layer's sha256 must equal the config's
 * rootfs.diff_ids[i] (uncompressed layer.tar, as docker save writes them) or
 * the hex of its "blobs/sha256/<hex>" path (docker >= 25).  The legacy
 * `repositories` file only contributes names. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"

/* hex digest carried by a file name, or NULL */
static bool digest_from_name(const char *path, char out[AN_DIGEST_SIZE]) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  char hex[65];
  if (!strncmp(path, "blobs/sha256/", 13) && n == 64) memcpy(hex, base, 65);
  else if (n == 69 && !strcmp(base + 64, ".json")) { memcpy(hex, base, 64); hex[64] = '\0'; }
  else return false;
  snprintf(out, AN_DIGEST_SIZE, "sha256:%s", hex);
  return an_digest_check(out, NULL, NULL) == 0;
}

int an_docker_archive_plan(const struct an_image_source *s, struct an_image_plan *p,
                           an_error_t *err) {
  cleanup_free char *mbuf = NULL;
  int r = an_source_read_blob(s, "manifest.json", NULL, -1, &mbuf, NULL, err);
  if (r < 0) return r;
  yajl_val mv = NULL;
  an_json_parse(mbuf, strlen(mbuf), "manifest.json", &mv, err);
  if (!mv) return an_error_prefix(err, "%s", s->path);
  r = 0;
  if (!YAJL_IS_ARRAY(mv) || mv->u.array.len != 1) {
    r = an_error_set(err, EINVAL, "%s: manifest.json must list exactly one image", s->path);
    goto out;
  }
  yajl_val m = mv->u.array.values[0];
  const char *cfg = an_json_member_str(m, "Config");
  yajl_val layers = an_json_member_type(m, "Layers", yajl_t_array);
  if (!cfg || !layers) {
    r = an_error_set(err, EINVAL, "%s: manifest.json: no Config or Layers", s->path);
    goto out;
  }
  char cdg[AN_DIGEST_SIZE];
  if (!digest_from_name(cfg, cdg)) {
    r = an_error_set(err, EINVAL, "%s: config \"%s\": its name carries no sha256 to verify it by",
                     s->path, cfg);
    goto out;
  }
  if ((r = an_source_read_blob(s, cfg, cdg, -1, &p->config, &p->config_len, err)) < 0) goto out;
  yajl_val cv = NULL;
  an_json_parse(p->config, strlen(p->config), "config", &cv, err);
  if (!cv) { r = an_error_prefix(err, "%s", s->path); goto out; }
  const char *diff_path[] = {"rootfs", "diff_ids", NULL};
  yajl_val diff_ids = yajl_tree_get(cv, diff_path, yajl_t_array);
  size_t n = layers->u.array.len;
  if (!(p->layers = calloc(n + 1, sizeof *p->layers))) r = an_error_set(err, ENOMEM, "layers");
  for (size_t i = 0; r == 0 && i < n; i++) {
    yajl_val l = layers->u.array.values[i];
    struct an_layer_desc *ld = &p->layers[p->n_layers];
    if (!YAJL_IS_STRING(l)) { r = an_error_set(err, EINVAL, "%s: Layers[%zu] is not a string", s->path, i); break; }
    const char *lp = l->u.string;
    if (!strncmp(lp, "blobs/sha256/", 13)) {
      if (!digest_from_name(lp, ld->digest)) { r = an_error_set(err, EINVAL, "%s: layer %s: bad digest path", s->path, lp); break; }
    } else {
      yajl_val d = diff_ids && i < diff_ids->u.array.len ? diff_ids->u.array.values[i] : NULL;
      if (!d || !YAJL_IS_STRING(d) || an_digest_check(d->u.string, NULL, err) < 0) {
        r = *err ? an_error_prefix(err, "%s: layer %s", s->path, lp)
                 : an_error_set(err, EINVAL, "%s: layer %s: no rootfs.diff_ids[%zu] in the config to verify it by", s->path, lp, i);
        break;
      }
      snprintf(ld->digest, AN_DIGEST_SIZE, "%s", d->u.string);
    }
    int fd = an_source_open_file(s, lp, err);
    if (fd < 0) { r = fd; break; }
    struct stat st;
    r = fstat(fd, &st) < 0 ? an_error_set(err, errno, "stat %s", lp) : 0;
    close(fd);
    if (r < 0) break;
    ld->size = st.st_size;
    ld->media_type = strdup("application/vnd.docker.image.rootfs.diff.tar");
    ld->path = strdup(lp);
    p->n_layers++;
    if (!ld->media_type || !ld->path) r = an_error_set(err, ENOMEM, "layers");
  }
  yajl_tree_free(cv);
  if (r < 0) goto out;
  /* RepoTags are only a naming hint: a malformed list is ignored, not fatal */
  yajl_val tags = an_json_member_type(m, "RepoTags", yajl_t_array);
  an_error_t tags_err = NULL;
  if (tags && an_json_get_strv(tags, "RepoTags", &p->names, &tags_err) < 0) p->names = NULL;
  an_error_free(&tags_err);
  if (!p->names) p->names = calloc(1, sizeof *p->names);
  if (!p->names) { r = an_error_set(err, ENOMEM, "names"); goto out; }
  r = an_manifest_synthesize(p, "application/vnd.docker.container.image.v1+json", err);
out:
  yajl_tree_free(mv);
  return r;
}
