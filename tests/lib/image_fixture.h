/* tests/lib/image_fixture.h — build test images in the tests themselves:
 * tar layers (libarchive write API, then raw header patches for names and
 * sizes libarchive refuses to write), OCI layouts, oci-archive and
 * docker-archive tars; and the CANARY tree snapshot that proves nothing was
 * written outside a rootfs. */
#ifndef AN_TEST_IMAGE_FIXTURE_H
#define AN_TEST_IMAGE_FIXTURE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "rm_tree.h"
#include "util.h"

/* entry tables list only the fields they need */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

struct tb_entry {
  char type;            /* 'f' file, 'd' dir, 'l' symlink, 'h' hardlink, 'c' char dev, 'b' block dev, 'p' fifo */
  const char *name;
  const char *data;     /* file content, or link target */
  mode_t mode;          /* 0: 0644 files, 0755 dirs */
  int uid, gid;         /* numeric owner (uname/gname are always "root") */
  int xattrs;           /* 1 adds user.test=1 and security.capability (pax format) */
};

struct tb_buf { char *data; size_t len; };

/* A tar of the entries; compression 0 none, 'g' gzip, 'z' zstd. */
struct tb_buf tb_tar(const struct tb_entry *e, size_t n, int compression);
/* Patch an uncompressed ustar buffer: rename the entry called `old` (<= 100
 * bytes) to the raw bytes `new_name` (may be "" or invalid UTF-8). */
void tb_patch_name(struct tb_buf *t, const char *old, const char *new_name, size_t new_len);
/* Set the size field of entry `name` to `size` (base-256), data unchanged. */
void tb_patch_size(struct tb_buf *t, const char *name, uint64_t size);
/* gzip a buffer (libarchive raw format + gzip filter). */
struct tb_buf tb_gzip(struct tb_buf in);
void tb_free(struct tb_buf *b);

/* sha256 "sha256:HEX" of a buffer. */
void tb_digest(const void *buf, size_t len, char out[72]);

/* Write an OCI image layout at dir with the given layer blobs (media type by
 * magic bytes), a config with Env/Cmd/WorkingDir, and index.json with
 * ref_name (may be NULL).  manifest_digest (72 bytes) receives the digest.
 * layer_digests (may be NULL) receives each layer's digest. */
void tb_oci_layout(const char *dir, const struct tb_buf *layers, size_t n, const char *ref_name,
                   char *manifest_digest, char (*layer_digests)[72]);
/* Tar up a directory tree (relative names) into file out. */
void tb_tar_dir(const char *dir, const char *out);
/* docker-archive tar at `out` (uncompressed layers, config <hex>.json,
 * <n>/layer.tar, manifest.json with RepoTags [repotag]). */
void tb_docker_archive(const char *out, const struct tb_buf *layers, size_t n, const char *repotag);

/* The CANARY: a host directory tree whose every file, dir and symlink is
 * recorded (path, type, size, mtime, content hash) except the subtree
 * `exclude` (the target).  Equal snapshots = untouched. */
char *tb_snapshot(const char *dir, const char *exclude);
#endif
