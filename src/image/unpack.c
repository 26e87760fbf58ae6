/* image/unpack.c — apply one tar stream onto a rootfs, safely by
 * construction.  libarchive only READS the stream; every entry is written
 * here through directory fds: parents are resolved with
 * openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS) on the rootfs fd (chroot
 * semantics, so an image symlink such as "up -> ../../.." or "root -> /"
 * resolves inside the rootfs), and the last component is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat, symlinkat, linkat(AT_EMPTY_PATH) or
 * mknodat, never through a path string.  The rules are documented in
 * agentnest/image.h (EXTRACTION RULES).  Whiteouts: whiteout.c.  Name rules:
 * entry_path.c.  Blob verification: layer.c. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"
#include "util/quote.h"

#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)

struct dir_time {
  char *path;
  struct timespec ts[2];
};

struct unpack {
  int rootfd;
  const struct an_unpack_opts *o;
  struct an_path_set *same_layer;
  char *cache_parent;          /* parent path whose fd is cache_fd */
  int cache_fd;
  struct dir_time *dirs;
  size_t n_dirs, cap_dirs;
  bool tail_missing;           /* the tar ended right after an entry's data */
};

static void cache_drop(struct unpack *u) {
  free(u->cache_parent);
  u->cache_parent = NULL;
  if (u->cache_fd >= 0) close(u->cache_fd);
  u->cache_fd = -1;
}

static int refuse(an_error_t *err, int e, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(an_error_t *err, int e, const char *path, const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return an_error_set(err, e, "entry \"%s\": %s", AN_QUOTED(path), why);
}

static void warn(const struct unpack *u, const char *path, const char *what) {
  if (!u->o->progress) return;
  char msg[AN_QUOTE_NAME_SIZE + 256];
  snprintf(msg, sizeof msg, "%s: entry \"%s\": %s", u->o->label ? u->o->label : "layer",
           AN_QUOTED(path), what);
  struct an_image_progress p = {.event = AN_IMAGE_EVENT_WARNING, .message = msg};
  u->o->progress(&p, u->o->userdata);
}

static void entry_times(struct archive_entry *e, struct timespec ts[2]) {
  ts[1].tv_sec = archive_entry_mtime_is_set(e) ? archive_entry_mtime(e) : 0;
  ts[1].tv_nsec = archive_entry_mtime_is_set(e) ? archive_entry_mtime_nsec(e) : 0;
  ts[0] = ts[1];
}

/* Owner, mode, xattrs of an open file or directory (fd-based, no path). */
static int set_meta_fd(struct unpack *u, int fd, const char *path, struct archive_entry *e,
                       an_error_t *err) {
  if (u->o->owners) {
    int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);
    if (uid < 0 || uid >= UINT32_MAX || gid < 0 || gid >= UINT32_MAX)
      return refuse(err, EINVAL, path, "uid/gid %lld:%lld out of range", (long long) uid,
                    (long long) gid);
    /* numeric ids only: archive_entry_uname() is never looked up (BL-24) */
    if (fchown(fd, (uid_t) uid, (gid_t) gid) < 0)
      return refuse(err, errno, path, "chown %lld:%lld", (long long) uid, (long long) gid);
  }
  /* after chown, which clears setuid/setgid */
  if (fchmod(fd, archive_entry_perm(e) & 07777) < 0) return refuse(err, errno, path, "chmod");
  const char *name;
  const void *val;
  size_t size;
  if (archive_entry_xattr_reset(e) > 0) {
    while (archive_entry_xattr_next(e, &name, &val, &size) == ARCHIVE_OK) {
      if (!strncmp(name, "user.", 5)) {
        if (fsetxattr(fd, name, val, size, 0) < 0 && errno != ENOTSUP)
          return refuse(err, errno, path, "set xattr %s", name);
      } else {
        char what[300];
        snprintf(what, sizeof what, "xattr %.200s dropped (only user.* are kept)", name);
        warn(u, path, what);
      }
    }
  }
  return 0;
}

static int defer_dir_time(struct unpack *u, const char *path, struct archive_entry *e) {
  if (u->n_dirs == u->cap_dirs) {
    size_t nc = u->cap_dirs ? u->cap_dirs * 2 : 64;
    struct dir_time *nd = realloc(u->dirs, nc * sizeof *nd);
    if (!nd) return -ENOMEM;
    u->dirs = nd;
    u->cap_dirs = nc;
  }
  char *p = strdup(path);
  if (!p) return -ENOMEM;
  u->dirs[u->n_dirs].path = p;
  entry_times(e, u->dirs[u->n_dirs].ts);
  u->n_dirs++;
  return 0;
}

/* Directory mtimes are set last: creating entries inside changes them. */
static void apply_dir_times(struct unpack *u) {
  for (size_t i = u->n_dirs; i-- > 0;) {
    int fd = an_openat2(u->rootfd, *u->dirs[i].path ? u->dirs[i].path : ".",
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0,
                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    if (fd >= 0) {
      futimens(fd, u->dirs[i].ts);
      close(fd);
    }
  }
}

static int write_data(struct unpack *u, struct archive *a, int fd, const char *path,
                      int64_t declared, int64_t *written, an_error_t *err) {
  const void *buf;
  size_t len;
  la_int64_t off;
  int64_t pos = 0;
  for (;;) {
    int r = archive_read_data_block(a, &buf, &len, &off);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      /* Some writers (umoci 0.4 `insert`) end the tar right after the last
       * file's data, without the 512-byte padding and end-of-archive blocks.
       * The data is complete (and the blob digest-verified), so accept the
       * entry and treat this as the end of the archive, with a warning. */
      if (pos >= declared) {
        u->tail_missing = true;
        warn(u, path, "tar ends without padding after this entry (tolerated)");
        break;
      }
      return refuse(err, EIO, path, "read data: %s", archive_error_string(a));
    }
    if (off + (int64_t) len > declared && (uint64_t) (off + (int64_t) len) > *u->o->budget_left)
      return refuse(err, EFBIG, path, "data exceeds the unpack limit of %llu bytes",
                    (unsigned long long) u->o->budget_total);
    if (off != pos && lseek(fd, off, SEEK_SET) < 0) return refuse(err, errno, path, "seek");
    const char *p = buf;
    while (len) {
      ssize_t n = write(fd, p, len);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return refuse(err, errno, path, "write");
      p += n;
      len -= (size_t) n;
      off += n;
    }
    pos = off;
  }
  if (pos < declared && ftruncate(fd, declared) < 0)   /* sparse tail */
    return refuse(err, errno, path, "truncate");
  *written = pos > declared ? pos : declared;
  return 0;
}

/* Make room for a new entry at base: remove what is there (no following). */
static int clear_slot(struct unpack *u, int pfd, const char *base, const char *path,
                      an_error_t *err) {
  /* pfd is the cached parent; base is a child, so the cache stays valid */
  (void) u;
  int r = an_remove_tree_beneath(pfd, base, err);
  return r < 0 ? an_error_prefix(err, "entry \"%s\": replace existing", path) : 0;
}

/* The parent directory fd of path (cached across consecutive entries). */
static int get_parent(struct unpack *u, const char *path, size_t plen, an_error_t *err) {
  if (u->cache_parent && strlen(u->cache_parent) == plen && !strncmp(u->cache_parent, path, plen))
    return u->cache_fd;
  cache_drop(u);
  cleanup_free char *parent = strndup(path, plen);
  if (!parent) return an_error_set(err, ENOMEM, "entry");
  int fd = an_mkdir_p_in_root(u->rootfd, parent, err);
  if (fd < 0) return an_error_prefix(err, "entry \"%s\"", path);
  u->cache_parent = an_steal(&parent);
  u->cache_fd = fd;
  return fd;
}

static int apply_entry(struct unpack *u, struct archive *a, struct archive_entry *e,
                       const char *path, an_error_t *err) {
  mode_t type = archive_entry_filetype(e);
  const char *hardlink = archive_entry_hardlink(e);
  if (!hardlink) hardlink = archive_entry_hardlink_utf8(e);

  if (!*path) {                          /* "./", ".", "/": the root itself */
    if (hardlink || type != AE_IFDIR)
      return refuse(err, EINVAL, archive_entry_pathname(e), "names the root but is not a directory");
    cleanup_close int fd = openat(u->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return refuse(err, errno, ".", "open root");
    int r = set_meta_fd(u, fd, ".", e, err);
    return r < 0 ? r : defer_dir_time(u, "", e);
  }

  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t plen = slash ? (size_t) (slash - path) : 0;

  if (u->o->whiteouts && an_whiteout_is(base)) {
    cache_drop(u);
    return an_whiteout_apply(u->rootfd, path, u->same_layer, u->o, err);
  }
  if (u->same_layer) {                  /* remember path and its parents for opaque whiteouts */
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (;;) {
      if (an_path_set_has(u->same_layer, tmp)) break;
      if (an_path_set_add(u->same_layer, tmp) < 0) return an_error_set(err, ENOMEM, "path set");
      char *s = strrchr(tmp, '/');
      if (!s) break;
      *s = '\0';
    }
  }

  int pfd = get_parent(u, path, plen, err);
  if (pfd < 0) return pfd;
  struct stat st;

  if (hardlink) {
    cleanup_free char *tpath = NULL;
    int r = an_entry_path_normalize(hardlink, &tpath, err);
    if (r < 0) return an_error_prefix(err, "entry \"%s\": hardlink target", AN_QUOTED(path));
    if (!*tpath) return refuse(err, EINVAL, path, "hardlink to the root refused");
    cleanup_close int tfd = an_openat2(u->rootfd, tpath, O_PATH | O_NOFOLLOW, 0, IN_ROOT);
    if (tfd < 0)
      return refuse(err, -tfd, path, "hardlink target \"%s\" %s", AN_QUOTED(tpath),
                    tfd == -ENOENT ? "not found in the rootfs" : "cannot be opened");
    if (fstat(tfd, &st) < 0) return refuse(err, errno, path, "stat hardlink target");
    if (S_ISDIR(st.st_mode))
      return refuse(err, EPERM, path, "hardlink target \"%s\" is a directory", AN_QUOTED(tpath));
    if (!strcmp(tpath, path)) return 0;
    if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && (r = clear_slot(u, pfd, base, path, err)) < 0)
      return r;
    if ((pfd = get_parent(u, path, plen, err)) < 0) return pfd;
    /* same inode, resolved inside the rootfs; never a copy of the bytes */
    if (linkat(tfd, "", pfd, base, AT_EMPTY_PATH) < 0)
      return refuse(err, errno, path, "link to \"%s\"", AN_QUOTED(tpath));
    return 0;
  }

  struct timespec ts[2];
  entry_times(e, ts);
  switch (type) {
  case AE_IFREG: {
    int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
    if (size < 0 || (uint64_t) size > *u->o->budget_left)
      return refuse(err, EFBIG, path, "size %lld exceeds the unpack limit of %llu bytes",
                    (long long) size, (unsigned long long) u->o->budget_total);
    int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
      int r = clear_slot(u, pfd, base, path, err);
      if (r < 0) return r;
      if ((pfd = get_parent(u, path, plen, err)) < 0) return pfd;
      fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    if (fd < 0) return refuse(err, errno, path, "create file");
    cleanup_close int cfd = fd;
    int r = write_data(u, a, fd, path, size, &size, err);
    if (r < 0) return r;
    *u->o->budget_left -= (uint64_t) size <= *u->o->budget_left ? (uint64_t) size : *u->o->budget_left;
    r = set_meta_fd(u, fd, path, e, err);
    if (r < 0) return r;
    if (futimens(fd, ts) < 0) return refuse(err, errno, path, "set times");
    return 0;
  }
  case AE_IFDIR: {
    if (mkdirat(pfd, base, 0700) < 0) {
      if (errno != EEXIST) return refuse(err, errno, path, "mkdir");
      if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) return refuse(err, errno, path, "stat");
      if (!S_ISDIR(st.st_mode)) {          /* e.g. a file or a symlink: replace, no following */
        int r = clear_slot(u, pfd, base, path, err);
        if (r < 0) return r;
        if ((pfd = get_parent(u, path, plen, err)) < 0) return pfd;
        if (mkdirat(pfd, base, 0700) < 0) return refuse(err, errno, path, "mkdir");
        cleanup_close int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) return refuse(err, errno, path, "open directory");
        r = set_meta_fd(u, dfd, path, e, err);
        return r < 0 ? r : defer_dir_time(u, path, e);
      }
    }
    cleanup_close int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return refuse(err, errno, path, "open directory");
    int r = set_meta_fd(u, dfd, path, e, err);
    if (r < 0) return r;
    return defer_dir_time(u, path, e) < 0 ? an_error_set(err, ENOMEM, "entry") : 0;
  }
  case AE_IFLNK: {
    const char *target = archive_entry_symlink(e);
    if (!target) target = archive_entry_symlink_utf8(e);
    if (!target || !*target) return refuse(err, EINVAL, path, "symlink with an empty target");
    if (symlinkat(target, pfd, base) < 0) {
      if (errno != EEXIST) return refuse(err, errno, path, "symlink");
      int r = clear_slot(u, pfd, base, path, err);
      if (r < 0) return r;
      if ((pfd = get_parent(u, path, plen, err)) < 0) return pfd;
      if (symlinkat(target, pfd, base) < 0) return refuse(err, errno, path, "symlink");
    }
    if (u->o->owners &&
        fchownat(pfd, base, (uid_t) archive_entry_uid(e), (gid_t) archive_entry_gid(e),
                 AT_SYMLINK_NOFOLLOW) < 0)
      return refuse(err, errno, path, "chown symlink");
    if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
      return refuse(err, errno, path, "set symlink times");
    return 0;
  }
  case AE_IFIFO: {
    if (mknodat(pfd, base, S_IFIFO | 0600, 0) < 0) {
      if (errno != EEXIST) return refuse(err, errno, path, "mkfifo");
      int r = clear_slot(u, pfd, base, path, err);
      if (r < 0) return r;
      if ((pfd = get_parent(u, path, plen, err)) < 0) return pfd;
      if (mknodat(pfd, base, S_IFIFO | 0600, 0) < 0) return refuse(err, errno, path, "mkfifo");
    }
    /* a FIFO cannot be opened without blocking: set metadata by name, no following */
    cleanup_close int ffd = openat(pfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (ffd < 0) return refuse(err, errno, path, "open fifo");
    if (u->o->owners && fchownat(ffd, "", (uid_t) archive_entry_uid(e),
                                 (gid_t) archive_entry_gid(e), AT_EMPTY_PATH) < 0)
      return refuse(err, errno, path, "chown fifo");
    if (fchmodat(pfd, base, archive_entry_perm(e) & 0777, AT_SYMLINK_NOFOLLOW) < 0)
      return refuse(err, errno, path, "chmod fifo");
    if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0) return refuse(err, errno, path, "set times");
    return 0;
  }
  case AE_IFCHR:
  case AE_IFBLK:
    warn(u, path, "device node skipped");
    return 0;
  case AE_IFSOCK:
    warn(u, path, "socket skipped");
    return 0;
  default:
    return refuse(err, EINVAL, path, "unsupported entry type 0%o", (unsigned) type);
  }
}

int an_unpack_archive(int rootfd, struct archive *a, const struct an_unpack_opts *o,
                      an_error_t *err) {
  struct unpack u = {.rootfd = rootfd, .o = o, .cache_fd = -1};
  int ret = 0;
  if (o->whiteouts && !(u.same_layer = an_path_set_new()))
    return an_error_set(err, ENOMEM, "unpack");
  for (;;) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      ret = an_error_set(err, EIO, "read entry: %s", archive_error_string(a));
      break;
    }
    const char *raw = archive_entry_pathname(e);
    if (!raw) raw = archive_entry_pathname_utf8(e);
    char *path = NULL;
    ret = an_entry_path_normalize(raw, &path, err);
    if (ret < 0) break;
    ret = apply_entry(&u, a, e, path, err);
    free(path);
    if (ret < 0 || u.tail_missing) break;
    if (o->tick) o->tick(o->tick_data);
  }
  if (ret == 0) apply_dir_times(&u);
  cache_drop(&u);
  for (size_t i = 0; i < u.n_dirs; i++) free(u.dirs[i].path);
  free(u.dirs);
  an_path_set_free(u.same_layer);
  return ret;
}
