/* sandbox/files.c — path-safe put/get of files and directory trees between
 * the host and a workspace (see agentnest/files.h).  All lookups beneath the
 * workspace go through util/safe_path (openat2, no symlinks); writes are
 * temp-file + renameat in the target directory, made durable by fsync for a
 * single file.  Directory trees: sandbox/files_tree.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/files.h"
#include "util/cleanup.h"
#include "util/quote.h"
#include "util/fdcopy.h"
#include "util/safe_path.h"
#include "sandbox/files_internal.h"

static const struct an_file_opts default_opts;

static uid_t owner_uid(const struct an_file_opts *o) { return o->set_owner ? o->uid : (uid_t) -1; }
static gid_t owner_gid(const struct an_file_opts *o) { return o->set_owner ? o->gid : (gid_t) -1; }

void an_files_resolve_opts(const struct an_file_opts *in, struct an_file_opts *out) {
  *out = in ? *in : default_opts;
  if (!out->max_bytes) out->max_bytes = AN_FILE_DEFAULT_MAX_BYTES;
  out->mode = out->mode ? (out->mode & 0777) : 0644;
  out->dir_mode = out->dir_mode ? (out->dir_mode & 0777) : 0755;
}

void an_warnf(an_warn_fn warn, void *data, const char *fmt, ...) {
  if (!warn) return;
  va_list ap;
  va_start(ap, fmt);
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) >= 0) {
    warn(data, msg);
    free(msg);
  }
  va_end(ap);
}

static int write_at(int parent, const char *name, const char *display, const void *data, size_t len,
                    int src_fd, uint64_t max_bytes, mode_t mode, const struct an_file_opts *o,
                    bool durable, uint64_t *copied, char *sha256_hex, an_error_t *err) {
  cleanup_free char *tmp = an_random_name(".an-put");
  if (!tmp) return an_error_set(err, ENOMEM, "write %s", display);
  /* O_EXCL|O_NOFOLLOW: the fresh random name cannot be a pre-planted link. */
  int fd = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return an_error_set(err, errno, "create temporary file for %s", display);
  int r = 0;
  {
    cleanup_close int wfd = fd;
    if (src_fd >= 0)
      r = an_copy_fd_capped(src_fd, wfd, max_bytes, display, copied, sha256_hex, err);
    else
      r = an_write_all(wfd, data, len, display, err);
    if (r == 0 && o->set_owner && fchown(wfd, o->uid, o->gid) < 0)
      r = an_error_set(err, errno, "chown %s to %d:%d", display, (int) o->uid, (int) o->gid);
    if (r == 0 && fchmod(wfd, mode & 0777) < 0) r = an_error_set(err, errno, "chmod %s", display);
    if (r == 0 && durable && fsync(wfd) < 0) r = an_error_set(err, errno, "fsync %s", display);
  }
  /* renameat replaces a symlink at `name` itself; it never follows it. */
  if (r == 0 && renameat(parent, tmp, parent, name) < 0)
    r = an_error_set(err, errno, "rename into place %s", display);
  if (r < 0) {
    unlinkat(parent, tmp, 0);
    return r;
  }
  if (durable && fsync(parent) < 0 && errno != EINVAL && errno != EBADF)
    return an_error_set(err, errno, "fsync directory of %s", display);
  return 0;
}

int an_files_write_at(int parent, const char *name, const char *display, const void *data,
                      size_t len, int src_fd, uint64_t max_bytes, mode_t mode,
                      const struct an_file_opts *o, bool durable, an_error_t *err) {
  return write_at(parent, name, display, data, len, src_fd, max_bytes, mode, o, durable, NULL, NULL, err);
}

int an_files_copy_hashed_at(int parent, const char *name, const char *display, int src_fd,
                            uint64_t max_bytes, mode_t mode, const struct an_file_opts *o,
                            uint64_t *copied, char *sha256_hex, an_error_t *err) {
  return write_at(parent, name, display, NULL, 0, src_fd, max_bytes, mode, o, false, copied, sha256_hex,
                  err);
}

static int put_common(int ws_dirfd, const char *relpath, const void *data, size_t len, int src_fd,
                      const struct an_file_opts *opts, an_error_t *err) {
  struct an_file_opts o;
  an_files_resolve_opts(opts, &o);
  cleanup_free char *name = NULL;
  cleanup_close int parent = an_open_parent_beneath(ws_dirfd, relpath, o.mkdir_parents, o.dir_mode,
                                                    owner_uid(&o), owner_gid(&o), &name, err);
  if (parent < 0) return an_error_prefix(err, "put %s", relpath);
  int r = an_files_write_at(parent, name, relpath, data, len, src_fd, UINT64_MAX, o.mode, &o, true, err);
  return r < 0 ? an_error_prefix(err, "put %s", relpath) : 0;
}

int an_file_put(int ws_dirfd, const char *relpath, const void *data, size_t len,
                const struct an_file_opts *opts, an_error_t *err) {
  if (!data && len) return an_error_set(err, EINVAL, "put %s: no data", relpath);
  return put_common(ws_dirfd, relpath, data ? data : "", len, -1, opts, err);
}

int an_file_put_fd(int ws_dirfd, const char *relpath, int src_fd, const struct an_file_opts *opts,
                   an_error_t *err) {
  if (src_fd < 0) return an_error_set(err, EBADF, "put %s: bad source fd", relpath);
  return put_common(ws_dirfd, relpath, NULL, 0, src_fd, opts, err);
}

/* Open a regular file for reading and refuse it early when its size is over
 * the cap (a sparse 100G file fails here without reading a byte). */
int an_files_open_capped(int dirfd, const char *relpath, const char *display, uint64_t max_bytes,
                         struct stat *st, an_error_t *err) {
  struct stat sb;
  int fd = an_open_regular_beneath(dirfd, relpath, &sb, err);
  if (fd < 0) return fd;
  if ((uint64_t) sb.st_size > max_bytes) {
    close(fd);
    return an_error_set(err, EFBIG, "%s: file too large (%lld bytes, cap %llu)", display,
                        (long long) sb.st_size, (unsigned long long) max_bytes);
  }
  if (st) *st = sb;
  return fd;
}

int an_file_get_fd(int ws_dirfd, const char *relpath, int dst_fd, const struct an_file_opts *opts,
                   uint64_t *copied, an_error_t *err) {
  struct an_file_opts o;
  an_files_resolve_opts(opts, &o);
  cleanup_close int fd = an_files_open_capped(ws_dirfd, relpath, relpath, o.max_bytes, NULL, err);
  if (fd < 0) return an_error_prefix(err, "get");
  int r = an_copy_fd_capped(fd, dst_fd, o.max_bytes, relpath, copied, NULL, err);
  return r < 0 ? an_error_prefix(err, "get") : 0;
}

int an_file_get(int ws_dirfd, const char *relpath, const struct an_file_opts *opts, void **data,
                size_t *len, an_error_t *err) {
  struct an_file_opts o;
  an_files_resolve_opts(opts, &o);
  struct stat st;
  cleanup_close int fd = an_files_open_capped(ws_dirfd, relpath, relpath, o.max_bytes, &st, err);
  if (fd < 0) return an_error_prefix(err, "get");
  /* The file may grow while we read: allocate for its size, grow up to cap+1. */
  size_t cap = (size_t) st.st_size + 1, used = 0;
  cleanup_free char *buf = malloc(cap + 1);
  if (!buf) return an_error_set(err, ENOMEM, "get %s", relpath);
  for (;;) {
    if (used == cap) {
      if ((uint64_t) used > o.max_bytes)
        return an_error_set(err, EFBIG, "get %s: file too large (more than %llu bytes)", relpath,
                            (unsigned long long) o.max_bytes);
      size_t ncap = cap * 2 > o.max_bytes + 1 ? (size_t) o.max_bytes + 1 : cap * 2;
      if (ncap <= cap) ncap = cap + 1;
      char *nb = realloc(buf, ncap + 1);
      if (!nb) return an_error_set(err, ENOMEM, "get %s", relpath);
      buf = nb;
      cap = ncap;
    }
    ssize_t n = read(fd, buf + used, cap - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "get %s: read", relpath);
    }
    if (n == 0) break;
    used += (size_t) n;
  }
  if ((uint64_t) used > o.max_bytes)
    return an_error_set(err, EFBIG, "get %s: file too large (more than %llu bytes)", relpath,
                        (unsigned long long) o.max_bytes);
  buf[used] = '\0';
  *data = an_steal(&buf);
  *len = used;
  return 0;
}
