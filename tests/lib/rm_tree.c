/* tests/lib/rm_tree.c — an_test_rm_tree: fd-relative removal of a test's
 * temporary tree that never crosses a symlink or a mount point (see
 * rm_tree.h).  Replaces nftw(FTW_DEPTH|FTW_PHYS|FTW_MOUNT) + unlink(path):
 * nftw opens subdirectories with openat(parent, name, O_DIRECTORY) (no
 * O_NOFOLLOW) after an lstat, and the callback's unlink(path) re-resolves
 * the whole path, so a directory swapped with a symlink to "/" during the
 * walk made it delete host files (incident 2026-11-29 21:26 UTC). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "rm_tree.h"

#define RM_MAX_DEPTH 128

static int open_beneath(int dirfd, const char *name) {
  struct open_how how = {
      .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
  };
  int fd;
  do fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof how);
  while (fd < 0 && (errno == EAGAIN || errno == EINTR));
  return fd < 0 ? -errno : fd;
}

static int mnt_id(int fd, uint64_t *id) {
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0) return -errno;
  if (!(stx.stx_mask & STATX_MNT_ID)) return -EOPNOTSUPP;
  *id = stx.stx_mnt_id;
  return 0;
}

static void keep_first(int *first, int r) {
  if (r < 0 && !*first) *first = r;
}

/* Empty the directory open at `fd` (consumed), which must be on `top_mnt`. */
static int empty_dir(int fd, uint64_t top_mnt, int depth) {
  uint64_t id = 0;
  int r = depth > RM_MAX_DEPTH ? -ELOOP : mnt_id(fd, &id);
  if (r == 0 && id != top_mnt) r = -EXDEV;
  DIR *d = r == 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (r == 0) r = -errno;
    close(fd);
    return r;
  }
  int first = 0;
  struct dirent *de;
  while ((errno = 0, de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) { keep_first(&first, -errno); continue; }
    int sub = open_beneath(dirfd(d), de->d_name);
    if (sub == -ENOENT) continue;
    if (sub < 0) { keep_first(&first, sub); continue; }   /* symlink/mount point: left alone */
    keep_first(&first, empty_dir(sub, top_mnt, depth + 1));
    if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT) keep_first(&first, -errno);
  }
  if (errno) keep_first(&first, -errno);
  closedir(d);
  return first;
}

static bool same_file(int fd, const char *path) {
  struct stat a, b;
  return path && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int an_test_rm_tree(const char *path) {
  if (!path || path[0] != '/') return -EINVAL;
  char *dir = strdup(path);
  if (!dir) return -ENOMEM;
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') dir[--n] = '\0';
  char *slash = strrchr(dir, '/');
  const char *base = slash + 1;
  if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) { free(dir); return -EINVAL; }
  *slash = '\0';
  int pfd = open(*dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0) { int e = -errno; free(dir); return e; }
  int top = open_beneath(pfd, base);
  int r = top;
  uint64_t top_mnt = 0;
  if (top >= 0 && (same_file(top, "/") || same_file(top, getenv("HOME")))) r = -EINVAL;
  if (r >= 0) r = mnt_id(top, &top_mnt);
  if (r >= 0) {
    r = empty_dir(top, top_mnt, 0);   /* consumes top */
    top = -1;
    if (unlinkat(pfd, base, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0) r = -errno;
  }
  if (top >= 0) close(top);
  if (r == -ENOENT) r = 0;   /* nothing to remove */
  close(pfd);
  free(dir);
  return r;
}
