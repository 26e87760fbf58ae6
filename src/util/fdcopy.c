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

/* 64 KiB of zeros: what a hole reads as (hashed, or written to a pipe). */
static const char zeros[1 << 16];

struct copy {
  int in_fd, out_fd;
  bool seek_out;      /* out_fd is a regular file: holes stay holes (lseek) */
  uint64_t max_bytes, total;
  const char *what;
  struct an_sha256 *md;
  char *buf;
};

static int over_cap(struct copy *c, an_error_t *err) {
  return an_error_set(err, EFBIG, "%s: file too large (more than %llu bytes)", c->what,
                      (unsigned long long) c->max_bytes);
}

/* Account for `n` bytes at the current logical end: cap, then hash. */
static int account(struct copy *c, const char *buf, size_t n, an_error_t *err) {
  if (c->total + (uint64_t) n > c->max_bytes) return over_cap(c, err);
  c->total += (uint64_t) n;
  if (c->md && an_sha256_update(c->md, buf, n) < 0) return an_error_set(err, EIO, "sha256 of %s", c->what);
  return 0;
}

/* A hole of `len` bytes: hashed as zeros; skipped in a regular output file
 * (its size is set by the final ftruncate), written as zeros to a pipe. */
static int copy_hole(struct copy *c, uint64_t len, an_error_t *err) {
  if (c->total + len > c->max_bytes) return over_cap(c, err);
  while (len > 0) {
    size_t n = len < sizeof zeros ? (size_t) len : sizeof zeros;
    int r = account(c, zeros, n, err);
    if (r < 0) return r;
    if (c->out_fd >= 0 && !c->seek_out && (r = an_write_all(c->out_fd, zeros, n, c->what, err)) < 0) return r;
    len -= n;
  }
  if (c->seek_out && lseek(c->out_fd, (off_t) c->total, SEEK_SET) < 0)
    return an_error_set(err, errno, "seek %s", c->what);
  return 0;
}

/* Data read with read(2) up to `limit` bytes (UINT64_MAX: to EOF). */
static int copy_data(struct copy *c, uint64_t limit, an_error_t *err) {
  while (limit > 0) {
    size_t want = limit < (1 << 16) ? (size_t) limit : (1 << 16);
    ssize_t n = read(c->in_fd, c->buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "read %s", c->what);
    }
    if (n == 0) break;
    int r = account(c, c->buf, (size_t) n, err);
    if (r < 0) return r;
    if (c->out_fd >= 0 && (r = an_write_all(c->out_fd, c->buf, (size_t) n, c->what, err)) < 0) return r;
    limit -= (uint64_t) n;
  }
  return 0;
}

/* Regular input: data extents found with SEEK_DATA/SEEK_HOLE (lseek(2)),
 * holes never read nor written, so a sparse file costs its data only. */
static int copy_sparse(struct copy *c, an_error_t *err) {
  for (;;) {
    off_t pos = (off_t) c->total;
    off_t data = lseek(c->in_fd, pos, SEEK_DATA);
    if (data < 0 && errno != ENXIO) return an_error_set(err, errno, "seek %s", c->what);
    if (data < 0) { /* no data after pos: a hole up to the end of the file */
      struct stat st;
      if (fstat(c->in_fd, &st) < 0) return an_error_set(err, errno, "stat %s", c->what);
      return st.st_size > pos ? copy_hole(c, (uint64_t) (st.st_size - pos), err) : 0;
    }
    if (data > pos) {
      int r = copy_hole(c, (uint64_t) (data - pos), err);
      if (r < 0) return r;
    }
    off_t hole = lseek(c->in_fd, data, SEEK_HOLE);
    if (hole < 0) return an_error_set(err, errno, "seek %s", c->what);
    if (lseek(c->in_fd, data, SEEK_SET) < 0) return an_error_set(err, errno, "seek %s", c->what);
    uint64_t before = c->total;
    int r = copy_data(c, (uint64_t) (hole - data), err);
    if (r < 0) return r;
    if (c->total == before) return 0; /* truncated meanwhile: EOF */
  }
}

int an_copy_fd_capped(int in_fd, int out_fd, uint64_t max_bytes, const char *what,
                      uint64_t *copied, char *sha256_hex, an_error_t *err) {
  __attribute__((cleanup(sha256_freep))) struct an_sha256 *md = NULL;
  if (sha256_hex && !(md = an_sha256_new()))
    return an_error_set(err, ENOMEM, "sha256 init for %s", what);
  cleanup_free char *buf = malloc(1 << 16);
  if (!buf) return an_error_set(err, ENOMEM, "copy %s", what);
  struct copy c = {.in_fd = in_fd, .out_fd = out_fd, .max_bytes = max_bytes, .what = what, .md = md, .buf = buf};
  struct stat ist, ost;
  bool sparse_in = fstat(in_fd, &ist) == 0 && S_ISREG(ist.st_mode) &&
                   lseek(in_fd, 0, SEEK_CUR) == 0;
  c.seek_out = out_fd >= 0 && fstat(out_fd, &ost) == 0 && S_ISREG(ost.st_mode) &&
               lseek(out_fd, 0, SEEK_CUR) == 0;
  int r = sparse_in ? copy_sparse(&c, err) : copy_data(&c, UINT64_MAX, err);
  if (r < 0) return r;
  /* a trailing hole: the output file gets its length without data */
  if (c.seek_out && ftruncate(out_fd, (off_t) c.total) < 0)
    return an_error_set(err, errno, "truncate %s", what);
  if (md && an_sha256_finish_hex(an_steal(&md), sha256_hex) < 0)
    return an_error_set(err, EIO, "sha256 of %s", what);
  if (copied) *copied = c.total;
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
