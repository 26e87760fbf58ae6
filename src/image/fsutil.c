/* image/fsutil.c — fd-relative file system helpers for the image store:
 * openat2(2) resolution, recursive removal that never follows symlinks,
 * mkdir -p with chroot semantics inside a rootfs, whole-file reads and
 * atomic writes.  No image-format knowledge lives here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"

int an_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve) {
  struct open_how how = {.flags = (uint64_t) flags | O_CLOEXEC, .mode = mode, .resolve = resolve};
  long fd;
  do fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  while (fd < 0 && errno == EAGAIN);
  return fd < 0 ? -errno : (int) fd;
}

int an_empty_dir_fd(int dirfd, bool (*keep)(const char *, void *), void *data, an_error_t *err) {
  int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return an_error_set(err, errno, "open directory");
  cleanup_closedir DIR *d = fdopendir(dfd);
  if (!d) { close(dfd); return an_error_set(err, errno, "read directory"); }
  struct dirent *de;
  errno = 0;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (keep && keep(de->d_name, data)) continue;
    int r = an_remove_tree_at(dirfd, de->d_name, err);
    if (r < 0) return r;
    errno = 0;
  }
  if (errno) return an_error_set(err, errno, "read directory");
  return 0;
}

int an_remove_tree_at(int dirfd, const char *name, an_error_t *err) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM)
    return an_error_set(err, errno, "remove \"%s\"", name);
  /* never across a mount point: a bind mount (of the same file system too)
   * left under an image directory is refused, not emptied */
  int fd0 = an_openat2(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0,
                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
  if (fd0 < 0) return an_error_set(err, -fd0, "open directory \"%s\"", name);
  cleanup_close int fd = fd0;
  int r = an_empty_dir_fd(fd, NULL, NULL, err);
  if (r < 0) return an_error_prefix(err, "remove \"%s\"", name);
  if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return an_error_set(err, errno, "remove directory \"%s\"", name);
  return 0;
}

#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)

int an_mkdir_p_in_root(int rootfd, const char *path, an_error_t *err) {
  int fd = an_openat2(rootfd, *path ? path : ".", O_PATH | O_DIRECTORY, 0, IN_ROOT);
  if (fd >= 0) return fd;
  if (fd != -ENOENT) return an_error_set(err, -fd, "open directory \"%s\"", path);
  const char *slash = strrchr(path, '/');
  cleanup_free char *parent = slash ? strndup(path, (size_t) (slash - path)) : strdup("");
  if (!parent) return an_error_set(err, ENOMEM, "mkdir \"%s\"", path);
  const char *last = slash ? slash + 1 : path;
  cleanup_close int pfd = an_mkdir_p_in_root(rootfd, parent, err);
  if (pfd < 0) return pfd;
  if (mkdirat(pfd, last, 0755) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "mkdir \"%s\"", path);
  fd = an_openat2(rootfd, path, O_PATH | O_DIRECTORY, 0, IN_ROOT);
  if (fd < 0) return an_error_set(err, -fd, "open directory \"%s\"", path);
  return fd;
}

int an_read_file_at(int dirfd, const char *path, uint64_t resolve, size_t max, char **buf,
                    size_t *len, an_error_t *err) {
  cleanup_close int fd = an_openat2(dirfd, path, O_RDONLY, 0, resolve);
  if (fd < 0) return an_error_set(err, -fd, "open %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0) return an_error_set(err, errno, "stat %s", path);
  if (!S_ISREG(st.st_mode)) return an_error_set(err, EINVAL, "%s: not a regular file", path);
  if ((uint64_t) st.st_size > max)
    return an_error_set(err, EFBIG, "%s: %lld bytes, more than the %zu allowed", path,
                        (long long) st.st_size, max);
  cleanup_free char *b = malloc((size_t) st.st_size + 1);
  if (!b) return an_error_set(err, ENOMEM, "read %s", path);
  size_t off = 0;
  for (;;) {
    if (off > (size_t) st.st_size) break;
    ssize_t n = read(fd, b + off, (size_t) st.st_size + 1 - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return an_error_set(err, errno, "read %s", path);
    if (n == 0) break;
    off += (size_t) n;
    if (off > (size_t) st.st_size) return an_error_set(err, EIO, "%s: grew while being read", path);
  }
  b[off] = '\0';
  *buf = an_steal(&b);
  if (len) *len = off;
  return 0;
}

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    p += n;
    len -= (size_t) n;
  }
  return 0;
}

int an_write_file_atomic_at(int dirfd, const char *name, const void *buf, size_t len,
                            an_error_t *err) {
  char tmp[NAME_MAX + 1];
  snprintf(tmp, sizeof tmp, ".%s.tmp-%d", name, (int) getpid());
  unlinkat(dirfd, tmp, 0);
  cleanup_close int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return an_error_set(err, errno, "create %s", tmp);
  int r = write_all(fd, buf, len);
  if (r == 0 && fsync(fd) < 0) r = -errno;
  if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0) r = -errno;
  if (r < 0) {
    unlinkat(dirfd, tmp, 0);
    return an_error_set(err, -r, "write %s", name);
  }
  fsync(dirfd);
  return 0;
}

int an_mkdir_p(const char *path, mode_t mode, an_error_t *err) {
  cleanup_free char *p = strdup(path);
  if (!p) return an_error_set(err, ENOMEM, "mkdir %s", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0755) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", p);
    *s = '/';
  }
  if (mkdir(p, mode) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", p);
  return 0;
}
