/* util/safe_path.c — symlink-free path resolution beneath a directory fd
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS),
 * step-by-step mkdir -p, mkdir -p with chroot semantics inside an image
 * rootfs, regular-file opening that never opens a FIFO or a device, and
 * tree removal that never follows a symlink or crosses a mount.  See
 * util/safe_path.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/quote.h"
#include "util/safe_path.h"

int an_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve) {
  struct open_how how = {
      .flags = (uint64_t) (flags | O_CLOEXEC),
      .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
      .resolve = resolve,
  };
  long fd;
  do
    fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  while (fd < 0 && (errno == EAGAIN || errno == EINTR));  /* EAGAIN: rename race, retry */
  return fd < 0 ? -errno : (int) fd;
}

/* The workspace resolution: fd, or -1 with errno set. */
static int sys_openat2(int dirfd, const char *path, int flags, mode_t mode) {
  int fd = an_openat2(dirfd, path, flags | O_NOFOLLOW, mode,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) {
    errno = -fd;
    return -1;
  }
  return fd;
}

static bool is_dotdot(const char *s, size_t n) { return n == 2 && s[0] == '.' && s[1] == '.'; }

int an_path_check_relative(const char *relpath, an_error_t *err) {
  if (!relpath || !*relpath) return an_error_set(err, EINVAL, "empty path");
  size_t len = strlen(relpath);
  if (len >= PATH_MAX) return an_error_set(err, ENAMETOOLONG, "path %.64s...", AN_QUOTED(relpath));
  if (relpath[0] == '/')
    return an_error_set(err, EXDEV, "%s: path escapes workspace (absolute path)", AN_QUOTED(relpath));
  for (const char *p = relpath; *p;) {
    size_t n = strcspn(p, "/");
    if (is_dotdot(p, n))
      return an_error_set(err, EXDEV, "%s: path escapes workspace ('..' component)", AN_QUOTED(relpath));
    p += n;
    while (*p == '/') p++;
  }
  return 0;
}

/* Report an openat2 failure: ELOOP (symlink met) and EXDEV (escape) both
 * mean "path escapes workspace". */
static int beneath_error(an_error_t *err, int e, const char *path) {
  if (e == ELOOP || e == EXDEV)
    return an_error_set(err, EXDEV, "%s: path escapes workspace (symlink or escape at a component)",
                        AN_QUOTED(path));
  if (e == ENOSYS)
    return an_error_set(err, ENOSYS, "%s: openat2 unavailable, refusing unsafe resolution", AN_QUOTED(path));
  return an_error_set(err, e, "open %s", AN_QUOTED(path));
}

/* Is `path` beneath dirfd a symlink, or does it cross one?  Only used to
 * word an error: O_DIRECTORY|O_NOFOLLOW on a trailing symlink gives ENOTDIR. */
static bool crosses_symlink(int dirfd, const char *path) {
  int fd = sys_openat2(dirfd, path, O_PATH, 0);
  if (fd < 0) return errno == ELOOP || errno == EXDEV;
  struct stat st;
  bool lnk = fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
  close(fd);
  return lnk;
}

/* openat2 and word its failure; a trailing symlink is refused even for
 * O_PATH (where the kernel returns a handle on the link itself). */
static int open_beneath_checked(int dirfd, const char *path, int flags, mode_t mode,
                                const char *display, an_error_t *err) {
  int fd = sys_openat2(dirfd, path, flags, mode);
  if (fd < 0) {
    int e = errno;
    if (e == ENOTDIR && crosses_symlink(dirfd, path)) e = ELOOP;
    return beneath_error(err, e, display);
  }
  if (flags & O_PATH) {
    struct stat st;
    if (fstat(fd, &st) < 0) {
      int e = errno;
      close(fd);
      return an_error_set(err, e, "stat %s", AN_QUOTED(display));
    }
    if (S_ISLNK(st.st_mode)) {
      close(fd);
      return beneath_error(err, ELOOP, display);
    }
  }
  return fd;
}

int an_openat_beneath(int dirfd, const char *relpath, int flags, mode_t mode, an_error_t *err) {
  int r = an_path_check_relative(relpath, err);
  if (r < 0) return r;
  return open_beneath_checked(dirfd, relpath, flags, mode, relpath, err);
}

int an_mkdir_p_beneath_owned(int dirfd, const char *relpath, mode_t mode, uid_t uid, gid_t gid,
                             an_error_t *err) {
  int r = an_path_check_relative(relpath, err);
  if (r < 0) return r;
  cleanup_free char *copy = strdup(relpath);
  if (!copy) return an_error_set(err, ENOMEM, "mkdir %s", AN_QUOTED(relpath));
  cleanup_close int cur = open_beneath_checked(dirfd, ".", O_RDONLY | O_DIRECTORY, 0, ".", err);
  if (cur < 0) return cur;
  char *save = NULL;
  for (char *comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
    if (strcmp(comp, ".") == 0) continue;
    bool created = false;
    int next = sys_openat2(cur, comp, O_RDONLY | O_DIRECTORY, 0);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(cur, comp, mode) == 0)
        created = true;
      else if (errno != EEXIST)
        return an_error_set(err, errno, "mkdir %s (component %s)", AN_QUOTED(relpath), AN_QUOTED(comp));
      next = sys_openat2(cur, comp, O_RDONLY | O_DIRECTORY, 0);
    }
    if (next < 0) {
      int e = errno;
      if (e == ENOTDIR && crosses_symlink(cur, comp)) e = ELOOP;
      if (e == ENOTDIR) return an_error_set(err, ENOTDIR, "mkdir %s: %s is not a directory",
          AN_QUOTED(relpath), AN_QUOTED(comp));
      return beneath_error(err, e, relpath);
    }
    close(cur);
    cur = next;
    /* Exact mode regardless of umask; owner only for what we created. */
    if (created && fchmod(cur, mode & 0777) < 0)
      return an_error_set(err, errno, "chmod %s (component %s)", AN_QUOTED(relpath), AN_QUOTED(comp));
    if (created && (uid != (uid_t) -1 || gid != (gid_t) -1) && fchown(cur, uid, gid) < 0)
      return an_error_set(err, errno, "chown %s (component %s)", AN_QUOTED(relpath), AN_QUOTED(comp));
  }
  return an_steal_fd(&cur);
}

int an_mkdir_p_beneath(int dirfd, const char *relpath, mode_t mode, an_error_t *err) {
  return an_mkdir_p_beneath_owned(dirfd, relpath, mode, (uid_t) -1, (gid_t) -1, err);
}

int an_open_parent_beneath(int dirfd, const char *relpath, bool mkdir_parents, mode_t dir_mode,
                           uid_t uid, gid_t gid, char **last, an_error_t *err) {
  int r = an_path_check_relative(relpath, err);
  if (r < 0) return r;
  cleanup_free char *copy = strdup(relpath);
  if (!copy) return an_error_set(err, ENOMEM, "open %s", AN_QUOTED(relpath));
  size_t len = strlen(copy);
  while (len > 1 && copy[len - 1] == '/') copy[--len] = '\0';
  char *slash = strrchr(copy, '/');
  const char *base = slash ? slash + 1 : copy;
  if (!*base || strcmp(base, ".") == 0)
    return an_error_set(err, EINVAL, "%s: names the workspace itself, not an entry in it", AN_QUOTED(relpath));
  cleanup_free char *name = strdup(base);
  if (!name) return an_error_set(err, ENOMEM, "open %s", AN_QUOTED(relpath));
  const char *parent = ".";
  if (slash) {
    *slash = '\0';
    if (*copy) parent = copy;
  }
  int fd = mkdir_parents ? an_mkdir_p_beneath_owned(dirfd, parent, dir_mode, uid, gid, err)
                         : an_openat_beneath(dirfd, parent, O_RDONLY | O_DIRECTORY, 0, err);
  if (fd < 0) return fd;
  *last = an_steal(&name);
  return fd;
}

int an_open_regular_beneath(int dirfd, const char *relpath, struct stat *st, an_error_t *err) {
  /* O_PATH opens nothing: no FIFO wait, no device open side effect. */
  cleanup_close int pfd = an_openat_beneath(dirfd, relpath, O_PATH, 0, err);
  if (pfd < 0) return pfd;
  struct stat sb;
  if (fstat(pfd, &sb) < 0) return an_error_set(err, errno, "stat %s", AN_QUOTED(relpath));
  if (!S_ISREG(sb.st_mode))
    return an_error_set(err, EINVAL, "%s: not a regular file (%s)", AN_QUOTED(relpath),
                        S_ISDIR(sb.st_mode)    ? "directory"
                        : S_ISFIFO(sb.st_mode) ? "FIFO"
                        : S_ISSOCK(sb.st_mode) ? "socket"
                        : S_ISCHR(sb.st_mode)  ? "character device"
                        : S_ISBLK(sb.st_mode)  ? "block device"
                                               : "special file");
  /* Re-open exactly this inode for reading (the runc/libpathrs "reopen"). */
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
  int fd = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return an_error_set(err, errno, "reopen %s for reading", AN_QUOTED(relpath));
  cleanup_close int fdc = fd;
  struct stat sb2;
  if (fstat(fd, &sb2) < 0) return an_error_set(err, errno, "stat %s", AN_QUOTED(relpath));
  if (sb2.st_dev != sb.st_dev || sb2.st_ino != sb.st_ino || !S_ISREG(sb2.st_mode))
    return an_error_set(err, EXDEV, "%s: path escapes workspace (inode changed on reopen)", AN_QUOTED(relpath));
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
    return an_error_set(err, errno, "fcntl %s", AN_QUOTED(relpath));
  if (st) *st = sb2;
  return an_steal_fd(&fdc);
}

/* Opens a directory to empty it: as sys_openat2, and never across a mount
 * point (RESOLVE_NO_XDEV), so a bind mount left in a tree -- even of the
 * same file system, which st_dev cannot tell -- is refused (EXDEV), not
 * emptied. */
static int open_for_removal(int dirfd, const char *path) {
  int fd = an_openat2(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
  if (fd < 0) {
    errno = -fd;
    return -1;
  }
  return fd;
}

/* Depth at which remove_rec stops descending and moves the subdirectory up
 * into the top of the tree instead, so any depth is removed with at most
 * this many fds open. */
#define REMOVE_FD_DEPTH 32

/* Empty directory `fd` (at `depth` below `top`; fd is consumed).  Sets *moved when a
 * too-deep subdirectory was renamed into `top` for a later pass. */
static int empty_dir(int top, int fd, const char *name, int depth, bool *moved, an_error_t *err);

static int remove_rec(int top, int parent, const char *name, int depth, bool *moved, an_error_t *err) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return an_error_set(err, errno, "remove %s", AN_QUOTED(name));
  if (depth >= REMOVE_FD_DEPTH && top >= 0) {
    cleanup_free char *tmp = an_random_name(".an-rm");
    if (!tmp) return an_error_set(err, ENOMEM, "remove %s", AN_QUOTED(name));
    if (renameat(parent, name, top, tmp) < 0) return an_error_set(err, errno, "move %s up for removal",
        AN_QUOTED(name));
    *moved = true;
    return 0;
  }
  int fd = open_for_removal(parent, name);
  if (fd < 0) return errno == ENOENT ? 0 : an_error_set(err, errno, "open %s for removal", AN_QUOTED(name));
  int r = empty_dir(top, fd, name, depth, moved, err);
  if (r < 0) return r;
  if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return an_error_set(err, errno, "rmdir %s", AN_QUOTED(name));
  return 0;
}

/* Takes ownership of `fd` (one fd per level: the DIR uses it). */
static int empty_dir(int top, int fd, const char *name, int depth, bool *moved, an_error_t *err) {
  cleanup_closedir DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return an_error_set(err, errno, "opendir %s", AN_QUOTED(name));
  }
  struct dirent *de;
  while ((errno = 0, de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    int r = remove_rec(top, dirfd(d), de->d_name, depth + 1, moved, err);
    if (r < 0) return an_error_prefix(err, "remove %s", name);
  }
  if (errno) return an_error_set(err, errno, "readdir %s", AN_QUOTED(name));
  return 0;
}

int an_remove_tree_beneath(int dirfd, const char *name, an_error_t *err) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return an_error_set(err, errno, "remove %s", AN_QUOTED(name));
  cleanup_close int top = open_for_removal(dirfd, name);
  if (top < 0) return errno == ENOENT ? 0 : an_error_set(err, errno, "open %s for removal", AN_QUOTED(name));
  /* Each pass removes up to REMOVE_FD_DEPTH levels everywhere and moves
   * deeper subtrees into `top`; repeat until nothing was moved. */
  for (;;) {
    bool moved = false;
    /* a fresh open file description: a dup would share the end offset of
     * the previous pass's readdir */
    int pass_fd = open_for_removal(top, ".");
    if (pass_fd < 0) return an_error_set(err, errno, "open %s for removal", AN_QUOTED(name));
    int r = empty_dir(top, pass_fd, name, 0, &moved, err);
    if (r < 0) return r;
    if (!moved) break;
  }
  if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return an_error_set(err, errno, "rmdir %s", AN_QUOTED(name));
  return 0;
}

int an_empty_dir_beneath(int dirfd, bool (*keep)(const char *name, void *data), void *data,
                         an_error_t *err) {
  int dfd = open_for_removal(dirfd, ".");
  if (dfd < 0) return an_error_set(err, errno, "open directory to empty it");
  cleanup_closedir DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return an_error_set(err, errno, "read directory to empty it");
  }
  struct dirent *de;
  while ((errno = 0, de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (keep && keep(de->d_name, data)) continue;
    int r = an_remove_tree_beneath(dirfd, de->d_name, err);
    if (r < 0) return r;
  }
  if (errno) return an_error_set(err, errno, "read directory to empty it");
  return 0;
}

#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)

int an_mkdir_p_in_root(int rootfd, const char *path, an_error_t *err) {
  int fd = an_openat2(rootfd, *path ? path : ".", O_PATH | O_DIRECTORY, 0, IN_ROOT);
  if (fd >= 0) return fd;
  if (fd != -ENOENT) return an_error_set(err, -fd, "open directory \"%s\"", AN_QUOTED(path));
  const char *slash = strrchr(path, '/');
  cleanup_free char *parent = slash ? strndup(path, (size_t) (slash - path)) : strdup("");
  if (!parent) return an_error_set(err, ENOMEM, "mkdir \"%s\"", AN_QUOTED(path));
  const char *last = slash ? slash + 1 : path;
  cleanup_close int pfd = an_mkdir_p_in_root(rootfd, parent, err);
  if (pfd < 0) return pfd;
  /* pfd is the resolved parent, last a single component: mkdirat never
   * follows a symlink at `last` (it fails EEXIST), and the re-open below
   * resolves in root again */
  if (mkdirat(pfd, last, 0755) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "mkdir \"%s\"", AN_QUOTED(path));
  fd = an_openat2(rootfd, path, O_PATH | O_DIRECTORY, 0, IN_ROOT);
  if (fd < 0) return an_error_set(err, -fd, "open directory \"%s\"", AN_QUOTED(path));
  return fd;
}

int an_mkdir_p_host(const char *path, mode_t mode, an_error_t *err) {
  cleanup_free char *p = strdup(path);
  if (!p) return an_error_set(err, ENOMEM, "mkdir %s", AN_QUOTED(path));
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0755) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", AN_QUOTED(p));
    *s = '/';
  }
  if (mkdir(p, mode) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", AN_QUOTED(p));
  return 0;
}

char *an_random_name(const char *prefix) {
  unsigned char rnd[8];
  size_t got = 0;
  while (got < sizeof rnd) {
    ssize_t n = getrandom(rnd + got, sizeof rnd - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      /* getrandom cannot fail with a valid buffer; fall back to pid+address */
      uintptr_t v = (uintptr_t) &got ^ (uintptr_t) getpid();
      memcpy(rnd, &v, sizeof v < sizeof rnd ? sizeof v : sizeof rnd);
      break;
    }
    got += (size_t) n;
  }
  char hex[2 * sizeof rnd + 1];
  an_hex_encode(rnd, sizeof rnd, hex);
  char *s = NULL;
  if (asprintf(&s, "%s.%s", prefix, hex) < 0) return NULL;
  return s;
}

void an_hex_encode(const unsigned char *bytes, size_t len, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * len] = '\0';
}
