/* image/archive_source.c — what SRC is: an OCI image layout directory, a tar
 * of one (oci-archive), a `docker save`/`podman save` tar (docker-archive),
 * or any other tar (a plain rootfs).  The kind is detected from the entry
 * names, never from the file name.  Archives of layouts are extracted (with
 * the same hardened unpacker as layers, no whiteouts, no owners) into the
 * import's scratch dir so that their blobs can be opened by path; every file
 * of a source is then opened with openat2(RESOLVE_IN_ROOT) on the source's
 * own root, so a symlink in a hostile source cannot reach the host. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"

#define MAX_META_BLOB (16u << 20)   /* manifests, configs, indexes */

const char *an_image_source_kind_name(enum an_image_source_kind kind) {
  switch (kind) {
  case AN_IMAGE_SOURCE_OCI_LAYOUT: return "oci-layout";
  case AN_IMAGE_SOURCE_OCI_ARCHIVE: return "oci-archive";
  case AN_IMAGE_SOURCE_DOCKER_ARCHIVE: return "docker-archive";
  case AN_IMAGE_SOURCE_ROOTFS_TAR: return "rootfs-tar";
  }
  return "unknown";
}

static bool is_hex64(const char *s, size_t n) {
  if (n != 64) return false;
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789abcdef", s[i]) || !s[i]) return false;
  return true;
}

/* Could this entry belong to an OCI layout or a docker-archive? */
static bool archive_member_name(const char *n) {
  static const char *fixed[] = {"index.json", "repositories", "blobs", "blobs/", "blobs/sha256",
                                "blobs/sha256/", "oci-layout", "manifest.json", NULL};
  for (const char **f = fixed; *f; f++)
    if (!strcmp(n, *f)) return true;
  if (!strncmp(n, "blobs/sha256/", 13)) return is_hex64(n + 13, strlen(n + 13));
  const char *slash = strchr(n, '/');
  const char *dot = strchr(n, '.');
  size_t stem = slash ? (size_t) (slash - n) : dot ? (size_t) (dot - n) : strlen(n);
  if (!is_hex64(n, stem)) return false;
  const char *rest = n + stem;
  return !*rest || !strcmp(rest, "/") || !strcmp(rest, ".json") || !strcmp(rest, ".tar") ||
         !strcmp(rest, "/layer.tar") || !strcmp(rest, "/json") || !strcmp(rest, "/VERSION");
}

int an_archive_detect_fd(int fd, enum an_image_source_kind *kind, an_error_t *err) {
  struct archive *a = archive_read_new();
  if (!a) return an_error_set(err, ENOMEM, "archive_read_new");
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_gnutar(a);
  int ret = 0;
  bool layout = false, manifest = false, other = false;
  size_t n = 0;
  if (archive_read_open_fd(a, fd, 64 * 1024) != ARCHIVE_OK) {
    ret = an_error_set(err, EINVAL, "not a tar archive: %s", archive_error_string(a));
    goto out;
  }
  for (;;) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      ret = an_error_set(err, EINVAL, "%s: %s", n ? "corrupt tar archive" : "not a tar archive",
                         archive_error_string(a));
      goto out;
    }
    n++;
    const char *name = archive_entry_pathname(e);
    if (!name) { other = true; break; }
    while (name[0] == '.' && name[1] == '/') name += 2;
    if (!strcmp(name, "oci-layout")) layout = true;
    else if (!strcmp(name, "manifest.json")) manifest = true;
    else if (!archive_member_name(name) && strcmp(name, ".") && *name) { other = true; break; }
  }
  *kind = other ? AN_IMAGE_SOURCE_ROOTFS_TAR
        : layout ? AN_IMAGE_SOURCE_OCI_ARCHIVE
        : manifest ? AN_IMAGE_SOURCE_DOCKER_ARCHIVE : AN_IMAGE_SOURCE_ROOTFS_TAR;
out:
  archive_read_free(a);
  return ret;
}

int an_source_open(const char *src, int scratch_dirfd, const struct an_unpack_opts *o,
                   struct an_image_source *s, an_error_t *err) {
  s->dirfd = s->filefd = -1;
  s->kind = 0;
  if (!(s->path = strdup(src))) return an_error_set(err, ENOMEM, "%s", src);
  /* O_NONBLOCK open, regular file or directory only: a FIFO given as the
   * image must not hang the CLI (BL-23) */
  struct stat st;
  cleanup_close int fd = an_open_input(AT_FDCWD, src, 0, true, &st, err);
  if (fd < 0) return fd;
  if (S_ISDIR(st.st_mode)) {
    if (faccessat(fd, "oci-layout", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
      s->kind = AN_IMAGE_SOURCE_OCI_LAYOUT;
    else if (faccessat(fd, "manifest.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
      s->kind = AN_IMAGE_SOURCE_DOCKER_ARCHIVE;
    else
      return an_error_set(err, EINVAL, "%s: directory is neither an OCI image layout (no oci-layout file) "
                          "nor an unpacked docker-archive (no manifest.json)", src);
    s->dirfd = an_steal_fd(&fd);
    return 0;
  }
  if (!S_ISREG(st.st_mode)) return an_error_set(err, EINVAL, "%s: not a file or a directory", src);
  int r = an_archive_detect_fd(fd, &s->kind, err);
  if (r < 0) return an_error_prefix(err, "%s", src);
  if (lseek(fd, 0, SEEK_SET) < 0) return an_error_set(err, errno, "seek %s", src);
  if (s->kind == AN_IMAGE_SOURCE_ROOTFS_TAR) {
    s->filefd = an_steal_fd(&fd);
    return 0;
  }
  if (mkdirat(scratch_dirfd, "source", 0700) < 0) return an_error_set(err, errno, "mkdir source");
  cleanup_close int dfd = openat(scratch_dirfd, "source", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return an_error_set(err, errno, "open source");
  struct an_unpack_opts xo = *o;
  xo.whiteouts = false;
  xo.owners = false;
  xo.label = src;
  r = an_archive_extract_fd(fd, dfd, &xo, err);
  if (r < 0) return an_error_prefix(err, "%s", src);
  s->dirfd = an_steal_fd(&dfd);
  return 0;
}

void an_source_close(struct an_image_source *s) {
  if (s->dirfd >= 0) close(s->dirfd);
  if (s->filefd >= 0) close(s->filefd);
  free(s->path);
  s->path = NULL;
  s->dirfd = s->filefd = -1;
}

int an_source_open_file(const struct an_image_source *s, const char *path, an_error_t *err) {
  if (!path) {
    int fd = dup(s->filefd);
    if (fd < 0) return an_error_set(err, errno, "dup");
    if (lseek(fd, 0, SEEK_SET) < 0) { close(fd); return an_error_set(err, errno, "seek %s", s->path); }
    return fd;
  }
  /* a FIFO as a blob is refused without waiting for a writer (BL-23) */
  cleanup_error an_error_t why = NULL;
  int fd = an_open_input(s->dirfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, false, NULL, &why);
  if (fd == -ENOENT) return an_error_set(err, ENOENT, "blob %s: not found in %s", path, s->path);
  if (fd < 0) return an_error_set(err, -fd, "%s in %s", why->msg, s->path);
  return fd;
}

int an_source_read_blob(const struct an_image_source *s, const char *path, const char *digest,
                        int64_t expected_size, char **buf, size_t *len, an_error_t *err) {
  cleanup_free char *b = NULL;
  size_t l = 0;
  int fd = an_source_open_file(s, path, err);
  if (fd < 0) return fd;
  close(fd);
  int r = an_read_file_at(s->dirfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, MAX_META_BLOB,
                          &b, &l, err);
  if (r < 0) return an_error_prefix(err, "%s", s->path);
  if (expected_size >= 0 && (uint64_t) expected_size != l)
    return an_error_set(err, EINVAL, "blob %s: size mismatch: descriptor says %lld bytes, blob has %zu",
                        digest ? digest : path, (long long) expected_size, l);
  if (digest) {
    char got[AN_DIGEST_SIZE];
    r = an_digest_buffer(b, l, path, got, err);
    if (r < 0) return r;
    if (strcmp(got, digest))
      return an_error_set(err, EINVAL, "blob %s: digest mismatch: blob has %s", digest, got);
  }
  if (memchr(b, '\0', l)) return an_error_set(err, EINVAL, "%s: contains a NUL byte", path);
  *buf = an_steal(&b);
  if (len) *len = l;
  return 0;
}
