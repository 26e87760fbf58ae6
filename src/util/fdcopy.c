/* util/fdcopy.c — capped, hashing fd copy, whole-file read and atomic
 * write (see util/fdcopy.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/safe_path.h"

static void sha256_freep(struct an_sha256 **h) { an_sha256_free(*h); }

int an_write_all(int fd, const void *buf, size_t len, const char *what, an_error_t *err) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "write %s", what);
    }
    p += n;
    len -= (size_t) n;
  }
  return 0;
}

int an_copy_fd_capped(int in_fd, int out_fd, uint64_t max_bytes, const char *what,
                      uint64_t *copied, char *sha256_hex, an_error_t *err) {
  __attribute__((cleanup(sha256_freep))) struct an_sha256 *md = NULL;
  if (sha256_hex && !(md = an_sha256_new()))
    return an_error_set(err, ENOMEM, "sha256 init for %s", what);
  cleanup_free char *buf = malloc(1 << 16);
  if (!buf) return an_error_set(err, ENOMEM, "copy %s", what);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(in_fd, buf, 1 << 16);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "read %s", what);
    }
    if (n == 0) break;
    if (total + (uint64_t) n > max_bytes)
      return an_error_set(err, EFBIG, "%s: file too large (more than %llu bytes)", what,
                          (unsigned long long) max_bytes);
    total += (uint64_t) n;
    if (md && an_sha256_update(md, buf, (size_t) n) < 0)
      return an_error_set(err, EIO, "sha256 of %s", what);
    if (out_fd >= 0) {
      int r = an_write_all(out_fd, buf, (size_t) n, what, err);
      if (r < 0) return r;
    }
  }
  if (md && an_sha256_finish_hex(an_steal(&md), sha256_hex) < 0)
    return an_error_set(err, EIO, "sha256 of %s", what);
  if (copied) *copied = total;
  return 0;
}

const char *an_file_type_name(mode_t mode) {
  return S_ISREG(mode)    ? "regular file"
         : S_ISDIR(mode)  ? "directory"
         : S_ISFIFO(mode) ? "FIFO"
         : S_ISSOCK(mode) ? "socket"
         : S_ISCHR(mode)  ? "character device"
         : S_ISBLK(mode)  ? "block device"
         : S_ISLNK(mode)  ? "symlink"
                          : "special file";
}

int an_open_input(int dirfd, const char *path, uint64_t resolve, bool allow_dir, struct stat *st,
                  an_error_t *err) {
  /* O_NONBLOCK: opening a FIFO for reading returns at once instead of
   * waiting for a writer; a tty is never made our controlling terminal. */
  int fd = an_openat2(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, resolve);
  if (fd < 0) return an_error_set(err, -fd, "open %s", path);
  cleanup_close int fdc = fd;
  struct stat sb;
  if (fstat(fd, &sb) < 0) return an_error_set(err, errno, "stat %s", path);
  if (!S_ISREG(sb.st_mode) && !(allow_dir && S_ISDIR(sb.st_mode)))
    return an_error_set(err, EINVAL, "%s: not a regular file (%s)", path, an_file_type_name(sb.st_mode));
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
    return an_error_set(err, errno, "fcntl %s", path);
  if (st) *st = sb;
  return an_steal_fd(&fdc);
}

int an_read_file_at(int dirfd, const char *path, uint64_t resolve, size_t max, char **buf,
                    size_t *len, an_error_t *err) {
  struct stat st;
  cleanup_close int fd = an_open_input(dirfd, path, resolve, false, &st, err);
  if (fd < 0) return fd;
  if ((uint64_t) st.st_size > max)
    return an_error_set(err, EFBIG, "%s: %lld bytes, more than the %zu allowed", path,
                        (long long) st.st_size, max);
  cleanup_free char *b = malloc((size_t) st.st_size + 1);
  if (!b) return an_error_set(err, ENOMEM, "read %s", path);
  size_t off = 0;
  for (;;) {
    /* one byte more than fstat said, to notice a file that grew */
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

int an_write_file_atomic_at(int dirfd, const char *name, const void *buf, size_t len,
                            bool durable, an_error_t *err) {
  cleanup_free char *tmp = an_random_name(".an-tmp");
  if (!tmp) return an_error_set(err, ENOMEM, "write %s", name);
  int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return an_error_set(err, errno, "create temporary file for %s", name);
  int r = an_write_all(fd, buf, len, name, err);
  if (r == 0 && durable && fsync(fd) < 0) r = an_error_set(err, errno, "fsync %s", name);
  close(fd);
  if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
    r = an_error_set(err, errno, "rename into place %s", name);
  if (r < 0) {
    unlinkat(dirfd, tmp, 0);
    return r;
  }
  if (durable && fsync(dirfd) < 0 && errno != EINVAL && errno != EBADF)
    return an_error_set(err, errno, "fsync directory of %s", name);
  return 0;
}
