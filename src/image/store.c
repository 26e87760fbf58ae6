/* image/store.c — the image store on disk (layout in agentnest/image.h):
 * opening and locking it, reading stored images (meta.json, config.json),
 * name lookup, and the list / resolve / inspect / remove operations.
 * Import lives in import.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)

/* Mark <root>/images as the top of directory hierarchies (FS_TOPDIR_FL,
 * `chattr +T`; ioctl_iflags(2)): each image root below it is one.  ext2/3/4's
 * Orlov allocator then places each import's temp dir (a random name) in an
 * inode group it picks afresh, instead of next to the store's previous trees.
 * Why: ext4 without a journal (this project's CI host) will not reuse an inode
 * freed in the last minute and scans past every such inode for each new one
 * (fs/ext4/ialloc.c, find_inode_bit/recently_deleted), so an import right
 * after an `image rm`, or after tests removed their trees, took 3-6 s instead
 * of 0.7 s.  Best effort: filesystems without the flag refuse or ignore it. */
static void mark_top_of_hierarchies(int imagesfd) {
  int flags = 0;
  if (ioctl(imagesfd, FS_IOC_GETFLAGS, &flags) < 0 || (flags & FS_TOPDIR_FL)) return;
  flags |= FS_TOPDIR_FL;
  (void) ioctl(imagesfd, FS_IOC_SETFLAGS, &flags);
}

int an_store_open(const char *store_root, bool create, an_error_t *err) {
  cleanup_free char *images = NULL;
  if (asprintf(&images, "%s/images", store_root) < 0) return an_error_set(err, ENOMEM, "store");
  if (create) {
    int r = an_mkdir_p_host(store_root, 0755, err);
    if (r < 0) return an_error_prefix(err, "image store");
    /* 0700: image roots keep their setuid bits; no host user may reach them */
    if (mkdir(images, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", images);
  }
  int fd = open(images, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open image store %s", images);
  if (create) mark_top_of_hierarchies(fd);
  return fd;
}

int an_store_lock(int imagesfd, const char *lockname, int op, an_error_t *err) {
  int fd = openat(imagesfd, lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return an_error_set(err, errno, "open lock %s", lockname);
  int r;
  do r = flock(fd, op);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK) return -EWOULDBLOCK;
    return an_error_set(err, e, "lock %s", lockname);
  }
  return fd;
}

static bool is_hex64(const char *s) {
  return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

void an_image_info_free(struct an_image_info *info) {
  if (!info) return;
  free(info->digest);
  an_strv_free(info->names);
  free(info->dir);
  free(info->rootfs);
  free(info->created);
  free(info->imported);
  an_image_config_clear(&info->config);
  free(info);
}

void an_image_list_free(struct an_image_info **list, size_t n) {
  for (size_t i = 0; list && i < n; i++) an_image_info_free(list[i]);
  free(list);
}

static enum an_image_source_kind kind_from_name(const char *s) {
  for (int k = AN_IMAGE_SOURCE_OCI_LAYOUT; k <= AN_IMAGE_SOURCE_ROOTFS_TAR; k++)
    if (s && !strcmp(s, an_image_source_kind_name(k))) return k;
  return 0;
}

int an_store_load_info(const char *store_root, int imagesfd, const char *hex,
                       const struct an_names *names, struct an_image_info **out, an_error_t *err) {
  char path[128];
  cleanup_free char *meta = NULL, *config = NULL;
  snprintf(path, sizeof path, "%s/meta.json", hex);
  int r = an_read_file_at(imagesfd, path, BENEATH, 1u << 20, &meta, NULL, err);
  if (r < 0) return an_error_prefix(err, "image sha256:%.12s", hex);
  snprintf(path, sizeof path, "%s/config.json", hex);
  r = an_read_file_at(imagesfd, path, BENEATH, 16u << 20, &config, NULL, err);
  if (r < 0) return an_error_prefix(err, "image sha256:%.12s", hex);
  struct an_image_info *info = calloc(1, sizeof *info);
  if (!info) return an_error_set(err, ENOMEM, "image info");
  yajl_val mv = NULL;
  an_json_parse(meta, strlen(meta), "meta.json", &mv, err);
  if (!mv) { an_image_info_free(info); return an_error_prefix(err, "image sha256:%.12s", hex); }
  const char *imported = an_json_member_str(mv, "imported");
  yajl_val size = an_json_member_type(mv, "size", yajl_t_number);
  info->size = size && YAJL_IS_INTEGER(size) ? (uint64_t) YAJL_GET_INTEGER(size) : 0;
  info->source = kind_from_name(an_json_member_str(mv, "source"));
  r = 0;
  cleanup_free char *abs_root = realpath(store_root, NULL);   /* documented as absolute */
  if (abs_root) store_root = abs_root;
  if (asprintf(&info->digest, "sha256:%s", hex) < 0) info->digest = NULL;
  if (asprintf(&info->dir, "%s/images/%s", store_root, hex) < 0) info->dir = NULL;
  if (asprintf(&info->rootfs, "%s/images/%s/rootfs", store_root, hex) < 0) info->rootfs = NULL;
  info->imported = imported ? strdup(imported) : NULL;
  info->names = an_names_for(names, info->digest ? info->digest : "");
  yajl_tree_free(mv);
  if (!info->digest || !info->dir || !info->rootfs || !info->names)
    r = an_error_set(err, ENOMEM, "image info");
  if (r == 0 && (r = an_image_config_parse(config, &info->config, &info->created, err)) < 0)
    an_error_prefix(err, "image sha256:%.12s", hex);
  if (r < 0) { an_image_info_free(info); return r; }
  *out = info;
  return 0;
}

static int image_exists(int imagesfd, const char *hex) {
  char path[128];
  snprintf(path, sizeof path, "%s/meta.json", hex);
  return faccessat(imagesfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* NAME -> hex (see NAMES in agentnest/image.h). */
static int lookup(int imagesfd, const struct an_names *names, const char *name, char hex[65],
                  an_error_t *err) {
  const char *h = NULL;
  if (!strncmp(name, "sha256:", 7)) {
    if (an_digest_check(name, hex, err) < 0) return an_error_prefix(err, "image %s", name);
    h = hex;
  } else if (strlen(name) >= 12 && strlen(name) <= 64 && strspn(name, "0123456789abcdef") == strlen(name)) {
    size_t n = strlen(name), found = 0;
    int dfd = openat(imagesfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) { if (dfd >= 0) close(dfd); return an_error_set(err, errno, "read image store"); }
    struct dirent *de;
    while ((de = readdir(d)))
      if (is_hex64(de->d_name) && !strncmp(de->d_name, name, n) && image_exists(imagesfd, de->d_name)) {
        if (found++) return an_error_set(err, EINVAL, "image %s: ambiguous digest prefix", name);
        memcpy(hex, de->d_name, 65);
      }
    if (found) return 0;
  }
  if (!h) {
    char digest[AN_DIGEST_SIZE];
    cleanup_free char *ref = NULL;
    an_error_t perr = NULL;
    if (an_image_ref_parse(name, &ref, digest, &perr) < 0) {
      if (strspn(name, "0123456789abcdef") == strlen(name)) {
        an_error_free(&perr);
        return an_error_set(err, ENOENT, "image %s: not found", name);
      }
      *err = perr;
      return -EINVAL;
    }
    const char *dg = *digest ? digest : ref ? an_names_get(names, ref) : NULL;
    if (!dg) return an_error_set(err, ENOENT, "image %s: not found", name);
    an_digest_check(dg, hex, NULL);
    h = hex;
  }
  if (!image_exists(imagesfd, h)) return an_error_set(err, ENOENT, "image %s: not found", name);
  return 0;
}

/* The image is not in the store (or there is no store): say how to import it. */
static int not_imported(const char *store_root, const char *name, an_error_t *err) {
  bool other = strcmp(store_root, AN_IMAGE_DEFAULT_STORE) != 0;
  an_error_free(err);
  return an_error_set(err, ENOENT, "image %s: not found in the image store %s; import it first: "
                      "agentnest%s%s image import SRC --name %s (agentnest-image(1))", name, store_root,
                      other ? " --root " : "", other ? store_root : "", name);
}

int an_image_resolve(const char *store_root, const char *name, struct an_image_info **info,
                     an_error_t *err) {
  an_error_t oerr = NULL;
  cleanup_close int imagesfd = an_store_open(store_root, false, &oerr);
  if (imagesfd < 0) {
    an_error_free(&oerr);
    return not_imported(store_root, name, err);
  }
  struct an_names names;
  int r = an_names_load(imagesfd, &names, err);
  if (r < 0) return r;
  char hex[65];
  r = lookup(imagesfd, &names, name, hex, err);
  if (r == -ENOENT) r = not_imported(store_root, name, err);
  if (r == 0) r = an_store_load_info(store_root, imagesfd, hex, &names, info, err);
  an_names_clear(&names);
  return r;
}

static int cmp_info(const void *a, const void *b) {
  return strcmp((*(struct an_image_info *const *) a)->digest, (*(struct an_image_info *const *) b)->digest);
}

int an_image_list(const char *store_root, struct an_image_info ***list, size_t *n, an_error_t *err) {
  *list = NULL;
  *n = 0;
  an_error_t oerr = NULL;
  cleanup_close int imagesfd = an_store_open(store_root, false, &oerr);
  if (imagesfd < 0) {
    if (imagesfd == -ENOENT) { an_error_free(&oerr); return 0; }
    *err = oerr;
    return imagesfd;
  }
  struct an_names names;
  int r = an_names_load(imagesfd, &names, err);
  if (r < 0) return r;
  int dfd = openat(imagesfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0) close(dfd);
    an_names_clear(&names);
    return an_error_set(err, errno, "read image store");
  }
  struct an_image_info **v = NULL;
  size_t cnt = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!is_hex64(de->d_name) || !image_exists(imagesfd, de->d_name)) continue;
    struct an_image_info *info = NULL;
    if ((r = an_store_load_info(store_root, imagesfd, de->d_name, &names, &info, err)) < 0) break;
    struct an_image_info **nv = realloc(v, (cnt + 1) * sizeof *nv);
    if (!nv) { an_image_info_free(info); r = an_error_set(err, ENOMEM, "image list"); break; }
    v = nv;
    v[cnt++] = info;
  }
  an_names_clear(&names);
  if (r < 0) { an_image_list_free(v, cnt); return r; }
  if (cnt) qsort(v, cnt, sizeof *v, cmp_info);
  *list = v;
  *n = cnt;
  return 0;
}

int an_image_inspect(const char *store_root, const char *name, char **json, an_error_t *err) {
  struct an_image_info *info = NULL;
  int r = an_image_resolve(store_root, name, &info, err);
  if (r < 0) return r;
  /* the layer digests, from the stored manifest */
  cleanup_free char *manifest = NULL, *mpath = NULL;
  if (asprintf(&mpath, "%s/manifest.json", info->dir) < 0) mpath = NULL;
  r = mpath ? an_read_file_at(AT_FDCWD, mpath, 0, 16u << 20, &manifest, NULL, err)
            : an_error_set(err, ENOMEM, "inspect");
  yajl_val mv = NULL;
  if (r == 0) an_json_parse(manifest, strlen(manifest), "manifest.json", &mv, err);
  if (!mv) { an_image_info_free(info); return r < 0 ? r : -EINVAL; }
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) {
    yajl_tree_free(mv);
    an_image_info_free(info);
    return an_error_set(err, ENOMEM, "inspect image %s: JSON", name);
  }
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "Id", info->digest);
  an_jgen_kv_strv(g, "RepoTags", (const char *const *) info->names);
  an_jgen_kv_str(g, "Created", info->created);
  an_jgen_kv_str(g, "Imported", info->imported);
  an_jgen_kv_u64(g, "Size", info->size);
  an_jgen_kv_str(g, "Source", an_image_source_kind_name(info->source));
  an_jgen_kv_str(g, "Rootfs", info->rootfs);
  an_jgen_kv_str(g, "Architecture", info->config.architecture);
  an_jgen_kv_str(g, "Os", info->config.os);
  an_jgen_key(g, "Config");
  an_jgen_map_open(g);
  an_jgen_kv_strv(g, "Env", (const char *const *) info->config.env);
  an_jgen_kv_strv(g, "Entrypoint", (const char *const *) info->config.entrypoint);
  an_jgen_kv_strv(g, "Cmd", (const char *const *) info->config.cmd);
  an_jgen_kv_str(g, "WorkingDir", info->config.working_dir);
  an_jgen_kv_str(g, "User", info->config.user);
  an_jgen_map_close(g);
  an_jgen_key(g, "Layers");
  an_jgen_array_open(g);
  yajl_val layers = an_json_member_type(mv, "layers", yajl_t_array);
  for (size_t i = 0; layers && i < layers->u.array.len; i++) {
    const char *dg = an_json_member_str(layers->u.array.values[i], "digest");
    if (dg) an_jgen_str(g, dg);
  }
  an_jgen_array_close(g);
  an_jgen_map_close(g);
  yajl_tree_free(mv);
  an_image_info_free(info);
  r = an_jgen_finish(&j, json, NULL);
  return r < 0 ? an_error_set(err, -r, "inspect image %s: JSON", name) : 0;
}

int an_image_remove(const char *store_root, const char *name, an_error_t *err) {
  an_error_t oerr = NULL;
  cleanup_close int imagesfd = an_store_open(store_root, false, &oerr);
  if (imagesfd < 0) {
    an_error_free(&oerr);
    return an_error_set(err, ENOENT, "image %s: not found (no image store at %s)", name, store_root);
  }
  cleanup_close int lock = an_store_lock(imagesfd, ".lock", LOCK_SH, err);
  if (lock < 0) return lock;
  cleanup_close int nlock = an_store_lock(imagesfd, ".names.lock", LOCK_EX, err);
  if (nlock < 0) return nlock;
  cleanup_free char *ref = NULL;   /* before any goto: cleanup must see it initialised */
  struct an_names names;
  int r = an_names_load(imagesfd, &names, err);
  if (r < 0) return r;
  char hex[65], digest[AN_DIGEST_SIZE];
  if ((r = lookup(imagesfd, &names, name, hex, err)) < 0) goto out;
  snprintf(digest, sizeof digest, "sha256:%s", hex);
  /* a tag is untagged; a digest removes every tag on it */
  char rd[AN_DIGEST_SIZE];
  an_error_t perr = NULL;
  bool by_tag = strncmp(name, "sha256:", 7) && an_image_ref_parse(name, &ref, rd, &perr) == 0 &&
                ref && !*rd && an_names_get(&names, ref);
  an_error_free(&perr);
  if (by_tag) an_names_del(&names, ref);
  else
    for (size_t i = names.n; i-- > 0;)
      if (!strcmp(names.digests[i], digest)) an_names_del(&names, names.names[i]);
  bool still_used = false;
  for (size_t i = 0; i < names.n; i++)
    if (!strcmp(names.digests[i], digest)) still_used = true;
  if ((r = an_names_save(imagesfd, &names, err)) < 0) goto out;
  if (!still_used) {
    char tmp[128];
    snprintf(tmp, sizeof tmp, ".tmp-rm-%.12s-%d", hex, (int) getpid());
    if (renameat(imagesfd, hex, imagesfd, tmp) < 0) {
      r = an_error_set(err, errno, "image %s: rename for removal", name);
      goto out;
    }
    fsync(imagesfd);
    r = an_remove_tree_beneath(imagesfd, tmp, err);
    if (r < 0) an_error_prefix(err, "image %s: remove", name);
  }
out:
  an_names_clear(&names);
  return r;
}
