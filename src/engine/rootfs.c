/* engine/rootfs.c — propagation, pivot_root, read-only root, readonly and
 * masked paths (see rootfs.h; pivot_root(2), mount_setattr(2)). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "engine/mount.h"
#include "engine/rootfs.h"
#include "util/cleanup.h"

int an_rootfs_prepare(const char *rootfs, const char *propagation, int root_mnt_fd, int *root_fd,
                      an_error_t *err) {
  /* runc's prepareRoot: everything in the new namespace becomes a slave
   * (rslave, the default) or private (rootfsPropagation private/rprivate)
   * before anything is mounted, so that no mount made here reaches the
   * host.  A shared rootfsPropagation is applied only after pivot_root
   * (an_rootfs_finalize), on the container's own mounts. */
  bool private = propagation && strstr(propagation, "private");
  unsigned long flags = (private ? MS_PRIVATE : MS_SLAVE) | MS_REC;
  if (mount(NULL, "/", NULL, flags, NULL) < 0)
    return an_error_set(err, errno, "make / %s", private ? "rprivate" : "rslave");
  if (move_mount(root_mnt_fd, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return an_error_set(err, errno, "attach rootfs %s over /", rootfs);
  /* The root was cloned in the runtime's namespace: a clone of a shared
   * mount (dockerd's data-root, a shared bundle) is a peer of it, and the
   * kernel refuses a shared new root (pivot_root(2): EINVAL) while every
   * mount made below it would appear on the host.  Make it and its
   * submounts a slave (or private) as the rest of the namespace. */
  struct mount_attr a = {.propagation = private ? MS_PRIVATE : MS_SLAVE};
  if (mount_setattr(root_mnt_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0)
    return an_error_set(err, errno, "make rootfs %s %s", rootfs, private ? "rprivate" : "rslave");
  int fd = fcntl(root_mnt_fd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return an_error_set(err, errno, "dup rootfs %s", rootfs);
  *root_fd = fd;
  return 0;
}

int an_rootfs_pivot(int root_fd, bool no_pivot, an_error_t *err) {
  if (fchdir(root_fd) < 0) return an_error_set(err, errno, "chdir to rootfs");
  if (no_pivot) {
    if (chroot(".") < 0) return an_error_set(err, errno, "chroot into rootfs");
  } else {
    /* pivot_root(".", ".") stacks the old root on top of the new one at "/";
     * detaching "." then leaves only the new root (pivot_root(2), NOTES). */
    if (syscall(SYS_pivot_root, ".", ".") < 0) return an_error_set(err, errno, "pivot_root into rootfs");
    if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
      return an_error_set(err, errno, "make old root rslave");
    if (umount2(".", MNT_DETACH) < 0) return an_error_set(err, errno, "detach old root");
  }
  if (chdir("/") < 0) return an_error_set(err, errno, "chdir /");
  return 0;
}

static unsigned long propagation_flags(const char *p) {
  static const struct { const char *name; unsigned long flags; } t[] = {
    {"private", MS_PRIVATE}, {"rprivate", MS_PRIVATE | MS_REC},
    {"slave", MS_SLAVE}, {"rslave", MS_SLAVE | MS_REC},
    {"shared", MS_SHARED}, {"rshared", MS_SHARED | MS_REC},
    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(t[i].name, p) == 0) return t[i].flags;
  return 0;
}

/* Open `path` below `root_fd`; *fd = -1 when it does not exist. */
static int open_protected(int root_fd, const char *path, int *fd, an_error_t *err) {
  an_error_t e = NULL;
  int r = an_mount_resolve(root_fd, path, false, false, fd, &e);
  if (r == -ENOENT) {
    an_error_free(&e);
    *fd = -1;
    return 0;
  }
  if (r < 0) {
    if (err && !*err) *err = e;
    else an_error_free(&e);
  }
  return r;
}

static int readonly_path(int root_fd, const char *path, an_error_t *err) {
  cleanup_close int target = -1;
  int r = open_protected(root_fd, path, &target, err);
  if (r < 0 || target < 0) return r;
  cleanup_close int mnt = -1;
  r = an_mount_clone_fd(target, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                        MOUNT_ATTR_NOEXEC, 0, &mnt, err);
  if (r < 0) return r;
  r = an_mount_attach(mnt, target, err);
  if (r < 0) return r;
  /* verify: the path now resolves to a read-only mount */
  cleanup_close int check = -1;
  r = an_mount_resolve(root_fd, path, false, false, &check, err);
  if (r < 0) return r;
  struct statvfs sv;
  if (fstatvfs(check, &sv) < 0) return an_error_set(err, errno, "statvfs after remount");
  if (!(sv.f_flag & ST_RDONLY)) return an_error_set(err, EIO, "still writable after remount");
  return 0;
}

static int masked_path(int root_fd, int null_fd, const char *path, an_error_t *err) {
  cleanup_close int target = -1;
  int r = open_protected(root_fd, path, &target, err);
  if (r < 0 || target < 0) return r;
  struct stat st;
  if (fstat(target, &st) < 0) return an_error_set(err, errno, "stat before masking");
  bool dir = S_ISDIR(st.st_mode);
  cleanup_close int mnt = -1;
  if (dir) {
    r = an_mount_new_fs("tmpfs", "tmpfs", "nr_inodes=1,mode=0555",
                        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                        MOUNT_ATTR_NOEXEC, &mnt, err);
  } else {
    if (null_fd < 0)
      return an_error_set(err, ENOENT, "no /dev/null (character device 1:3) to mask it with");
    r = an_mount_clone_fd(null_fd, false, 0, 0, &mnt, err);
  }
  if (r < 0) return r;
  r = an_mount_attach(mnt, target, err);
  if (r < 0) return r;
  cleanup_close int check = -1;
  r = an_mount_resolve(root_fd, path, false, false, &check, err);
  if (r < 0) return r;
  if (dir) {
    struct statfs sf;
    if (fstatfs(check, &sf) < 0) return an_error_set(err, errno, "statfs after masking");
    if (sf.f_type != TMPFS_MAGIC || !(sf.f_flags & ST_RDONLY))
      return an_error_set(err, EIO, "not masked after mount");
  } else {
    if (fstat(check, &st) < 0) return an_error_set(err, errno, "stat after masking");
    if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
      return an_error_set(err, EIO, "not masked after mount");
  }
  return 0;
}

int an_rootfs_finalize(const struct an_spec *spec, an_error_t *err) {
  const struct an_spec_linux *l = &spec->linux;
  if (l->rootfs_propagation && l->rootfs_propagation[0]) {
    unsigned long f = propagation_flags(l->rootfs_propagation);
    if (!f)
      return an_error_set(err, EINVAL, "linux.rootfsPropagation: unknown value \"%s\"",
                          l->rootfs_propagation);
    if (mount(NULL, "/", NULL, f, NULL) < 0)
      return an_error_set(err, errno, "set rootfs propagation %s", l->rootfs_propagation);
  }
  cleanup_close int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return an_error_set(err, errno, "open /");
  if (spec->root.readonly) {
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
    if (mount_setattr(root_fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
      return an_error_set(err, errno, "make root read-only");
  }
  for (size_t i = 0; l->readonly_paths && l->readonly_paths[i]; i++) {
    int r = readonly_path(root_fd, l->readonly_paths[i], err);
    if (r < 0) return an_error_prefix(err, "linux.readonlyPaths: %s", l->readonly_paths[i]);
  }
  if (l->masked_paths && l->masked_paths[0]) {
    /* The mask for files is the container's own /dev/null, and only if it
     * really is the null device (BL-07: never a planted symlink or file). */
    cleanup_close int null_fd = -1;
    an_error_t e = NULL;
    if (an_mount_resolve(root_fd, "/dev/null", false, false, &null_fd, &e) == 0) {
      struct stat st;
      if (fstat(null_fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
        close(null_fd);
        null_fd = -1;
      }
    }
    an_error_free(&e);
    for (size_t i = 0; l->masked_paths[i]; i++) {
      int r = masked_path(root_fd, null_fd, l->masked_paths[i], err);
      if (r < 0) return an_error_prefix(err, "linux.maskedPaths: %s", l->masked_paths[i]);
    }
  }
  return 0;
}
