/* image/image_internal.h — declarations shared by the src/image sources (not public).
 * Public API: include/agentnest/image.h.  Each block names the file that
 * implements it. */
#ifndef AN_IMAGE_INTERNAL_H
#define AN_IMAGE_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <yajl/yajl_tree.h>
#include "agentnest/error.h"
#include "agentnest/image.h"

/* This machine's architecture in the OCI image-spec's GOARCH words (image
 * config "architecture", image index platform): an index entry for another
 * architecture is skipped, a rootfs tar's generated config names this one. */
#if defined(__x86_64__)
#define HOST_ARCH "amd64"
#elif defined(__aarch64__)
#define HOST_ARCH "arm64"
#else
#define HOST_ARCH "unknown"
#endif
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_tree.h"
#include "util/safe_path.h"
#include "util/sha256.h"

struct archive;

/* ---- digest.c: "sha256:<hex>" digests (OCI descriptor.md "Digests") ---- */
#define AN_DIGEST_SIZE 72            /* "sha256:" + 64 hex + NUL */
/* Finish a util/sha256.h stream into "sha256:HEX" (out has AN_DIGEST_SIZE
 * bytes); frees h.  Returns 0 or -EIO. */
int an_digest_finish(struct an_sha256 *h, char out[AN_DIGEST_SIZE]);
/* "sha256:HEX" of a buffer; `what` names it in errors.  0, -ENOMEM or -EIO. */
int an_digest_buffer(const void *buf, size_t len, const char *what, char out[AN_DIGEST_SIZE],
                     an_error_t *err);
/* Validate "sha256:<64 lowercase hex>"; copy the hex part to hex (65 bytes)
 * if non-NULL.  -ENOTSUP for another algorithm, -EINVAL when malformed. */
int an_digest_check(const char *digest, char *hex, an_error_t *err);

/* fd-relative file system helpers (openat2, removal, mkdir -p in root,
 * whole-file read, atomic write) are util/safe_path.h and util/fdcopy.h. */

/* ---- entry_path.c: tar entry name rules (see image.h EXTRACTION RULES) ---- */
/* Normalise an entry name into a relative path with no ".", "..", empty
 * components or leading '/'.  *out is "" for the root itself.  Errors name
 * the entry: -EINVAL (empty, invalid UTF-8, "..", too long). */
int an_entry_path_normalize(const char *name, char **out, an_error_t *err);

/* ---- unpack.c: apply one tar stream onto a rootfs ---- */
struct an_unpack_opts {
  uint64_t *budget_left;       /* bytes of file data still allowed (shared by all layers) */
  uint64_t budget_total;       /* for messages */
  bool whiteouts;              /* apply OCI whiteouts (false for outer archives) */
  bool owners;                 /* apply uid/gid from the headers */
  an_image_progress_fn progress;
  void *userdata;
  const char *label;           /* "layer sha256:..." for warnings */
  void (*tick)(void *tick_data); /* called after each entry, on the caller's thread */
  void *tick_data;
};
/* Read every entry of the opened archive A and write it below ROOTFD. */
int an_unpack_archive(int rootfd, struct archive *a, const struct an_unpack_opts *o,
                      an_error_t *err);

/* ---- whiteout.c: OCI layer.md whiteouts ---- */
struct an_path_set;
struct an_path_set *an_path_set_new(void);
void an_path_set_free(struct an_path_set *s);
int an_path_set_add(struct an_path_set *s, const char *path);
bool an_path_set_has(const struct an_path_set *s, const char *path);
/* Is basename a whiteout (starts with ".wh.")? */
bool an_whiteout_is(const char *base);
/* Apply the whiteout entry at normalised PATH (whose basename starts with
 * ".wh.").  SAME_LAYER holds the paths written by the current layer. */
int an_whiteout_apply(int rootfd, const char *path, const struct an_path_set *same_layer,
                      const struct an_unpack_opts *o, an_error_t *err);

/* ---- layer.c: stream one blob through sha256 and libarchive ---- */
struct an_layer_desc {
  char *media_type;
  char digest[AN_DIGEST_SIZE];  /* expected digest of the blob bytes */
  int64_t size;                 /* expected size, -1 when the source gives none */
  char *path;                   /* path of the blob inside the source */
};
/* Verify blob fd against desc and apply it as a layer onto rootfd. */
int an_layer_apply(int rootfd, int blobfd, const struct an_layer_desc *desc, size_t index,
                   size_t n, const struct an_unpack_opts *o, an_error_t *err);
/* Read (and extract, unverified: it is only a container) an outer tar. */
int an_archive_extract_fd(int fd, int destfd, const struct an_unpack_opts *o, an_error_t *err);

/* JSON: util/json_tree.h (bounded parse, accessors); strv: util/cleanup.h. */

/* ---- source.c / archive_source.c: what SRC is and how to open its blobs ---- */
struct an_image_source {
  enum an_image_source_kind kind;
  char *path;      /* SRC as given */
  int dirfd;       /* layout/archive root (directory or extracted archive), or -1 */
  int filefd;      /* ROOTFS_TAR: the tar itself, else -1 */
};
/* Detect SRC's kind; for tar archives of a layout, extract them into
 * scratch_dirfd/"source".  */
int an_source_open(const char *src, int scratch_dirfd, const struct an_unpack_opts *o,
                   struct an_image_source *s, an_error_t *err);
void an_source_close(struct an_image_source *s);
/* Open a file of the source read-only, resolved inside it (RESOLVE_IN_ROOT).
 * -ENOENT message: "blob PATH: not found in SRC". */
int an_source_open_file(const struct an_image_source *s, const char *path, an_error_t *err);
/* Read and verify a small blob (manifest, config, index). expected_size -1 = unknown. */
int an_source_read_blob(const struct an_image_source *s, const char *path, const char *digest,
                        int64_t expected_size, char **buf, size_t *len, an_error_t *err);
/* Scan a tar (headers only) and tell which kind of archive it is. */
int an_archive_detect_fd(int fd, enum an_image_source_kind *kind, an_error_t *err);

/* ---- plan: what to unpack (oci_layout.c, docker_archive.c, rootfs_tar.c) ---- */
struct an_image_plan {
  char *manifest; size_t manifest_len;
  char manifest_digest[AN_DIGEST_SIZE];
  char *config; size_t config_len;
  struct an_layer_desc *layers; size_t n_layers;
  char **names;    /* names the source carries (NULL-terminated, may be empty) */
};
void an_image_plan_clear(struct an_image_plan *p);
int an_oci_layout_plan(const struct an_image_source *s, const char *want_digest,
                       const char *want_ref, struct an_image_plan *p, an_error_t *err);
int an_docker_archive_plan(const struct an_image_source *s, struct an_image_plan *p,
                           an_error_t *err);
int an_rootfs_tar_plan(const struct an_image_source *s, struct an_image_plan *p,
                       an_error_t *err);
/* Build a manifest JSON from a config and layer descriptors (util/json_gen). */
int an_manifest_synthesize(struct an_image_plan *p, const char *config_media_type,
                           an_error_t *err);
/* Is this a layer media type we can apply?  (OCI and Docker schema2) */
bool an_layer_media_type_ok(const char *mt);

/* ---- image_config.c ---- */
int an_image_config_parse(const char *buf, struct an_image_config *c, char **created,
                          an_error_t *err);

/* ---- names.c: NAME[:TAG][@sha256:HEX] and the names index ---- */
/* Split NAME: *ref gets "name:tag" (":latest" added when no tag) or NULL when
 * only a digest was given; digest gets "sha256:HEX" or "". */
int an_image_ref_parse(const char *name, char **ref, char digest[AN_DIGEST_SIZE],
                       an_error_t *err);
struct an_names {
  char **names; char **digests; size_t n;
};
void an_names_clear(struct an_names *n);
int an_names_load(int imagesfd, struct an_names *n, an_error_t *err);
int an_names_save(int imagesfd, const struct an_names *n, an_error_t *err);
/* Set ref -> digest (replacing an existing mapping). */
int an_names_set(struct an_names *n, const char *ref, const char *digest);
/* Remove ref; returns true if it was there. */
bool an_names_del(struct an_names *n, const char *ref);
const char *an_names_get(const struct an_names *n, const char *ref);
/* Names pointing at digest, sorted, NULL-terminated (caller frees). */
char **an_names_for(const struct an_names *n, const char *digest);

/* ---- store.c ---- */
/* Open (creating) <root>/images with mode 0700; returns O_DIRECTORY fd.
 * When creating, also marks it FS_TOPDIR_FL where the filesystem has it. */
int an_store_open(const char *store_root, bool create, an_error_t *err);
/* Take flock(2) on <images>/<lockname>: returns the lock fd. */
int an_store_lock(int imagesfd, const char *lockname, int op, an_error_t *err);
/* Build an an_image_info for stored digest hex. */
int an_store_load_info(const char *store_root, int imagesfd, const char *hex,
                       const struct an_names *names, struct an_image_info **info,
                       an_error_t *err);
#endif
