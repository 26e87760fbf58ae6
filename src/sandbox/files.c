/* sandbox/files.c — path-safe put/get of files and directory trees between
 * the host and a workspace (see agentnest/files.h).  All lookups beneath the
 * workspace go through util/safe_path (openat2, no symlinks); writes are
 * temp-file + renameat in the target directory, made durable by fsync for a
 * single file and by one syncfs(2) for a directory tree. */
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

/* ---- directory trees ---------------------------------------------------- */

static int join(char *out, size_t n, const char *dir, const char *name) {
  int w = snprintf(out, n, "%s/%s", dir, name);
  return (w < 0 || (size_t) w >= n) ? -ENAMETOOLONG : 0;
}

static int symlink_at(int parent, const char *name, const char *target, const char *display,
                      const struct an_file_opts *o, an_error_t *err) {
  cleanup_free char *tmp = an_random_name(".an-lnk");
  if (!tmp) return an_error_set(err, ENOMEM, "symlink %s", display);
  if (symlinkat(target, parent, tmp) < 0) return an_error_set(err, errno, "symlink %s", display);
  if (o->set_owner && fchownat(parent, tmp, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0) {
    int e = errno;
    unlinkat(parent, tmp, 0);
    return an_error_set(err, e, "chown symlink %s", display);
  }
  if (renameat(parent, tmp, parent, name) < 0) {
    int e = errno;
    unlinkat(parent, tmp, 0);
    return an_error_set(err, e, "rename symlink %s into place", display);
  }
  return 0;
}

/* mkdir `name` in `parent` if missing and open it beneath (no symlink). */
static int mkdir_open(int parent, const char *name, mode_t mode, const char *display,
                      const struct an_file_opts *o, an_error_t *err) {
  bool created = mkdirat(parent, name, mode) == 0;
  if (!created && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", display);
  int fd = an_openat_beneath(parent, name, O_RDONLY | O_DIRECTORY, 0, err);
  if (fd < 0) return an_error_prefix(err, "directory %s", display);
  if (created && (fchmod(fd, mode & 0777) < 0 || (o->set_owner && fchown(fd, o->uid, o->gid) < 0))) {
    int e = errno;
    close(fd);
    return an_error_set(err, e, "chown %s", display);
  }
  return fd;
}

/* One entry of a tree copy: `name` in directory `src` (lstat'ed as *st),
 * shown as `path`, copied into directory `dst`. */
typedef int (*copy_entry_fn)(int src, int dst, const char *name, const char *path,
                             const struct stat *st, int depth, const struct an_file_opts *o,
                             an_error_t *err);

/* Walk one directory level of a tree copy: every entry of `src` but "." and
 * ".." goes to copy_entry.  An entry gone before its lstat is skipped when
 * `skip_vanished` (the sandbox may remove files while we copy out). */
static int copy_tree(int src, int dst, const char *display, int depth, copy_entry_fn copy_entry,
                     bool skip_vanished, const struct an_file_opts *o, an_error_t *err) {
  if (depth > AN_TREE_MAX_DEPTH) return an_error_set(err, ELOOP, "%s: nesting too deep", display);
  int dfd = dup(src);
  if (dfd < 0) return an_error_set(err, errno, "dup %s", display);
  cleanup_closedir DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return an_error_set(err, errno, "opendir %s", display);
  }
  struct dirent *de;
  while ((errno = 0, de = readdir(d))) {
    const char *name = de->d_name;
    if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
    char path[PATH_MAX];
    if (join(path, sizeof path, display, name) < 0)
      return an_error_set(err, ENAMETOOLONG, "%s/%s", display, name);
    struct stat st;
    if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno == ENOENT && skip_vanished) continue;
      return an_error_set(err, errno, "stat %s", path);
    }
    int r = copy_entry(src, dst, name, path, &st, depth, o, err);
    if (r < 0) return r;
  }
  if (errno) return an_error_set(err, errno, "readdir %s", display);
  return 0;
}

/* host -> workspace: directories, regular files and symlinks (as links). */
static int copy_entry_in(int src, int dst, const char *name, const char *path,
                         const struct stat *st, int depth, const struct an_file_opts *o,
                         an_error_t *err) {
  if (S_ISDIR(st->st_mode)) {
    cleanup_close int s2 = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s2 < 0) return an_error_set(err, errno, "open %s", path);
    cleanup_close int d2 = mkdir_open(dst, name, o->dir_mode, path, o, err);
    if (d2 < 0) return d2;
    return copy_tree(s2, d2, path, depth + 1, copy_entry_in, false, o, err);
  }
  if (S_ISREG(st->st_mode)) {
    cleanup_close int s2 = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (s2 < 0) return an_error_set(err, errno, "open %s", path);
    return an_files_write_at(dst, name, path, NULL, 0, s2, UINT64_MAX, st->st_mode & 0777, o, false, err);
  }
  if (S_ISLNK(st->st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlinkat(src, name, target, sizeof target - 1);
    if (n < 0) return an_error_set(err, errno, "readlink %s", path);
    target[n] = '\0';
    return symlink_at(dst, name, target, path, o, err);
  }
  an_warnf(o->warn, o->warn_data, "%s: skipped, not a regular file, directory or symlink", path);
  return 0;
}

int an_dir_put(int ws_dirfd, const char *relpath, const char *host_dir,
               const struct an_file_opts *opts, an_error_t *err) {
  struct an_file_opts o;
  an_files_resolve_opts(opts, &o);
  cleanup_close int src = open(host_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) return an_error_set(err, errno, "put directory: open %s", host_dir);
  cleanup_close int dst = -1;
  if (o.mkdir_parents) {
    dst = an_mkdir_p_beneath_owned(ws_dirfd, relpath, o.dir_mode, owner_uid(&o), owner_gid(&o), err);
  } else {
    cleanup_free char *name = NULL;
    cleanup_close int parent =
        an_open_parent_beneath(ws_dirfd, relpath, false, 0, (uid_t) -1, (gid_t) -1, &name, err);
    if (parent < 0) return an_error_prefix(err, "put directory %s", relpath);
    dst = mkdir_open(parent, name, o.dir_mode, relpath, &o, err);
  }
  if (dst < 0) return an_error_prefix(err, "put directory %s", relpath);
  int r = copy_tree(src, dst, relpath, 0, copy_entry_in, false, &o, err);
  if (r < 0) return an_error_prefix(err, "put directory %s", host_dir);
  /* one syncfs(2) for the tree instead of an fsync per file */
  if (syncfs(dst) < 0) return an_error_set(err, errno, "put directory %s: sync", relpath);
  return 0;
}

/* workspace -> host: directories and regular files (capped); symlinks
 * are never followed nor copied. */
static int copy_entry_out(int src, int dst, const char *name, const char *path,
                          const struct stat *st, int depth, const struct an_file_opts *o,
                          an_error_t *err) {
  if (S_ISDIR(st->st_mode)) {
    /* The type check is only a hint: the open refuses a symlink swapped in
     * meanwhile. */
    cleanup_close int s2 = an_openat_beneath(src, name, O_RDONLY | O_DIRECTORY, 0, err);
    if (s2 < 0) return an_error_prefix(err, "get %s", path);
    cleanup_close int d2 = mkdir_open(dst, name, AN_HOST_COPY_MODE(st->st_mode) | 0700, path, o, err);
    if (d2 < 0) return d2;
    return copy_tree(s2, d2, path, depth + 1, copy_entry_out, true, o, err);
  }
  if (S_ISREG(st->st_mode)) {
    cleanup_close int s2 = an_files_open_capped(src, name, path, o->max_bytes, NULL, err);
    if (s2 < 0) return an_error_prefix(err, "get");
    return an_files_write_at(dst, name, path, NULL, 0, s2, o->max_bytes, AN_HOST_COPY_MODE(st->st_mode), o,
                             false, err);
  }
  if (S_ISLNK(st->st_mode))
    an_warnf(o->warn, o->warn_data, "\"%s\": skipped symlink (symlinks are never followed)",
             AN_QUOTED(path));
  else
    an_warnf(o->warn, o->warn_data, "\"%s\": skipped, not a regular file", AN_QUOTED(path));
  return 0;
}

int an_dir_get(int ws_dirfd, const char *relpath, const char *host_dir,
               const struct an_file_opts *opts, an_error_t *err) {
  struct an_file_opts o;
  an_files_resolve_opts(opts, &o);
  cleanup_close int src = an_openat_beneath(ws_dirfd, relpath, O_RDONLY | O_DIRECTORY, 0, err);
  if (src < 0) return an_error_prefix(err, "get directory");
  if (mkdir(host_dir, 0755) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "get directory %s: mkdir %s", relpath, host_dir);
  cleanup_close int dst = open(host_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dst < 0) return an_error_set(err, errno, "get directory %s: open %s", relpath, host_dir);
  int r = copy_tree(src, dst, relpath, 0, copy_entry_out, true, &o, err);
  if (r < 0) return an_error_prefix(err, "get directory %s", relpath);
  if (syncfs(dst) < 0) return an_error_set(err, errno, "get directory %s: sync %s", relpath, host_dir);
  return 0;
}
