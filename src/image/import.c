/* image/import.c — an_image_import(): detect the source, plan, unpack every
 * layer into a temp dir inside the store, write config/manifest/meta, sync,
 * and rename into place (atomic: the image directory exists complete or not
 * at all).  Idempotent: a manifest digest already stored is only (re)tagged.
 * Temp dirs of crashed imports are swept when no other import holds the
 * store (flock .lock: importers hold it shared, the sweeper exclusively). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/utc.h"
#include "image/image_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

#define TMP_PREFIX ".tmp-"

static void sweep_stale(int imagesfd) {
  int dfd = openat(imagesfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) { if (dfd >= 0) close(dfd); return; }
  struct dirent *de;
  while ((de = readdir(d)))
    if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
      an_error_t e = NULL;
      an_remove_tree_beneath(imagesfd, de->d_name, &e);   /* best effort */
      an_error_free(&e);
    }
}

/* Shared store lock; sweep first if nobody else is importing. */
static int lock_and_sweep(int imagesfd, an_error_t *err) {
  int fd = an_store_lock(imagesfd, ".lock", LOCK_EX | LOCK_NB, err);
  if (fd >= 0) {
    sweep_stale(imagesfd);
    close(fd);   /* a sweeper racing in here only finds temp dirs older than ours */
  } else if (fd != -EWOULDBLOCK)
    return fd;
  return an_store_lock(imagesfd, ".lock", LOCK_SH, err);
}

static int write_meta(int dirfd, const struct an_image_plan *p, enum an_image_source_kind kind,
                      uint64_t size, an_error_t *err) {
  char now[32], t[24];
  an_utc_format(time(NULL), t, sizeof t);
  snprintf(now, sizeof now, "%.19sZ", t);
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "meta.json: JSON");
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "digest", p->manifest_digest);
  an_jgen_kv_str(&j, "source", an_image_source_kind_name(kind));
  an_jgen_kv_str(&j, "imported", now);
  an_jgen_kv_u64(&j, "size", size);
  an_jgen_key(&j, "layers");
  an_jgen_array_open(&j);
  for (size_t i = 0; i < p->n_layers; i++) an_jgen_str(&j, p->layers[i].digest);
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  return an_jgen_write_file_at(&j, dirfd, "meta.json", false, err);
}

/* Unpack plan p from source s into tmpfd/"image". Returns bytes unpacked. */
static int build_image(int tmpfd, const struct an_image_source *s, const struct an_image_plan *p,
                       const struct an_image_import_opts *opts, uint64_t *unpacked, an_error_t *err) {
  if (mkdirat(tmpfd, "image", 0755) < 0) return an_error_set(err, errno, "mkdir image");
  cleanup_close int imgfd = openat(tmpfd, "image", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (imgfd < 0) return an_error_set(err, errno, "open image");
  if (mkdirat(imgfd, "rootfs", 0755) < 0) return an_error_set(err, errno, "mkdir rootfs");
  cleanup_close int rootfd = openat(imgfd, "rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) return an_error_set(err, errno, "open rootfs");
  uint64_t cap = opts->max_unpack_bytes ? opts->max_unpack_bytes : AN_IMAGE_DEFAULT_MAX_UNPACK;
  uint64_t left = cap;
  struct an_unpack_opts uo = {.budget_left = &left, .budget_total = cap, .whiteouts = true,
                              .owners = true, .progress = opts->progress, .userdata = opts->userdata};
  for (size_t i = 0; i < p->n_layers; i++) {
    cleanup_close int bfd = an_source_open_file(s, p->layers[i].path, err);
    if (bfd < 0) return an_error_prefix(err, "layer %s", p->layers[i].digest);
    int r = an_layer_apply(rootfd, bfd, &p->layers[i], i, p->n_layers, &uo, err);
    if (r < 0) return r;
  }
  int r;
  /* not durable one by one: do_import makes the whole new tree durable with
   * one syncfs(2) before renaming it into the store */
  if ((r = an_write_file_atomic_at(imgfd, "config.json", p->config, p->config_len, false, err)) < 0 ||
      (r = an_write_file_atomic_at(imgfd, "manifest.json", p->manifest, p->manifest_len, false, err)) < 0 ||
      (r = write_meta(imgfd, p, s->kind, cap - left, err)) < 0)
    return r;
  *unpacked = cap - left;
  return 0;
}

static int tag_image(int imagesfd, char **refs, const char *digest, an_error_t *err) {
  if (!refs || !*refs) return 0;
  cleanup_close int nlock = an_store_lock(imagesfd, ".names.lock", LOCK_EX, err);
  if (nlock < 0) return nlock;
  struct an_names names;
  int r = an_names_load(imagesfd, &names, err);
  if (r < 0) return r;
  for (char **n = refs; *n && r == 0; n++)
    if (an_names_set(&names, *n, digest) < 0) r = an_error_set(err, ENOMEM, "names");
  if (r == 0) r = an_names_save(imagesfd, &names, err);
  an_names_clear(&names);
  return r;
}

static int do_import(const char *store_root, int imagesfd, int tmpfd, const char *src,
                     const char *ref, const char *want_digest, const struct an_image_import_opts *opts,
                     struct an_image_info **result, an_error_t *err) {
  struct an_image_source s = {.dirfd = -1, .filefd = -1};
  /* "LAYOUT:TAG" (as skopeo's oci:DIR:TAG) selects a tagged manifest of a layout */
  cleanup_free char *src_dir = NULL, *select = NULL;
  struct stat st;
  const char *colon = strrchr(src, ':');
  if (colon && stat(src, &st) < 0 && errno == ENOENT && colon[1] && !strchr(colon, '/')) {
    src_dir = strndup(src, (size_t) (colon - src));
    if (!src_dir || asprintf(&select, "layout%s", colon) < 0) return an_error_set(err, ENOMEM, "import");
    if (stat(src_dir, &st) == 0 && S_ISDIR(st.st_mode)) src = src_dir;
  }
  struct an_image_plan p = {0};
  uint64_t cap = opts->max_unpack_bytes ? opts->max_unpack_bytes : AN_IMAGE_DEFAULT_MAX_UNPACK;
  uint64_t left = cap;
  struct an_unpack_opts so = {.budget_left = &left, .budget_total = cap,
                              .progress = opts->progress, .userdata = opts->userdata};
  int r = an_source_open(src, tmpfd, &so, &s, err);
  if (r < 0) goto out;
  if (opts->progress) {
    struct an_image_progress ev = {.event = AN_IMAGE_EVENT_SOURCE, .kind = s.kind};
    opts->progress(&ev, opts->userdata);
  }
  switch (s.kind) {
  case AN_IMAGE_SOURCE_OCI_LAYOUT:
  case AN_IMAGE_SOURCE_OCI_ARCHIVE:
    r = an_oci_layout_plan(&s, *want_digest ? want_digest : NULL, src == src_dir ? select : ref, &p, err);
    break;
  case AN_IMAGE_SOURCE_DOCKER_ARCHIVE: r = an_docker_archive_plan(&s, &p, err); break;
  case AN_IMAGE_SOURCE_ROOTFS_TAR: r = an_rootfs_tar_plan(&s, &p, err); break;
  }
  if (r < 0) goto out;
  if (*want_digest && strcmp(want_digest, p.manifest_digest)) {
    r = an_error_set(err, EINVAL, "requested digest %s does not match the image's %s", want_digest,
                     p.manifest_digest);
    goto out;
  }
  char hex[65];
  an_digest_check(p.manifest_digest, hex, NULL);
  char meta[128];
  snprintf(meta, sizeof meta, "%s/meta.json", hex);
  bool present = faccessat(imagesfd, meta, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
  if (!present) {
    uint64_t unpacked = 0;
    if ((r = build_image(tmpfd, &s, &p, opts, &unpacked, err)) < 0) goto out;
    an_source_close(&s);
    if (!opts->no_sync && syncfs(imagesfd) < 0) { r = an_error_set(err, errno, "syncfs"); goto out; }
    if (renameat2(tmpfd, "image", imagesfd, hex, RENAME_NOREPLACE) < 0) {
      if (errno != EEXIST && errno != ENOTEMPTY) { r = an_error_set(err, errno, "rename into %s", hex); goto out; }
      present = true;   /* a concurrent import of the same image won */
    }
    fsync(imagesfd);
  }
  /* names: the one asked for, else the source's own */
  char *one[2] = {(char *) ref, NULL};
  if ((r = tag_image(imagesfd, ref ? one : p.names, p.manifest_digest, err)) < 0) goto out;
  if (result) {
    struct an_names names;
    if ((r = an_names_load(imagesfd, &names, err)) < 0) goto out;
    r = an_store_load_info(store_root, imagesfd, hex, &names, result, err);
    an_names_clear(&names);
    if (r < 0) goto out;
    (*result)->already_present = present;
  }
  if (opts->progress) {
    struct an_image_progress ev = {.event = AN_IMAGE_EVENT_DONE, .kind = s.kind,
                                   .digest = p.manifest_digest, .already_present = present};
    opts->progress(&ev, opts->userdata);
  }
out:
  an_source_close(&s);
  an_image_plan_clear(&p);
  return r;
}

int an_image_import(const char *store_root, const char *src, const char *name,
                    const struct an_image_import_opts *opts, struct an_image_info **result,
                    an_error_t *err) {
  static const struct an_image_import_opts no_opts;
  if (!opts) opts = &no_opts;
  if (result) *result = NULL;
  cleanup_free char *ref = NULL;
  char want_digest[AN_DIGEST_SIZE] = "";
  if (name && an_image_ref_parse(name, &ref, want_digest, err) < 0) return -EINVAL;
  cleanup_close int imagesfd = an_store_open(store_root, true, err);
  if (imagesfd < 0) return imagesfd;
  cleanup_close int lock = lock_and_sweep(imagesfd, err);
  if (lock < 0) return lock;

  unsigned char rnd[8];
  if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) return an_error_set(err, errno, "getrandom");
  char tmpname[64];
  snprintf(tmpname, sizeof tmpname, TMP_PREFIX "%d-%02x%02x%02x%02x%02x%02x%02x%02x", (int) getpid(),
           rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
  if (mkdirat(imagesfd, tmpname, 0700) < 0) return an_error_set(err, errno, "mkdir %s", tmpname);
  int tmpfd = openat(imagesfd, tmpname, O_PATH | O_DIRECTORY | O_CLOEXEC);
  int r;
  if (tmpfd < 0) r = an_error_set(err, errno, "open %s", tmpname);
  else {
    r = do_import(store_root, imagesfd, tmpfd, src, ref, want_digest, opts, result, err);
    close(tmpfd);
  }
  an_error_t cerr = NULL;
  an_remove_tree_beneath(imagesfd, tmpname, &cerr);   /* on success: only the scratch source */
  an_error_free(&cerr);
  if (r < 0) return an_error_prefix(err, "image import %s", src);
  return 0;
}
