/* sandbox/workspace_quota.c — the workspace directory and the kernel
 * mechanism that bounds its bytes and inodes (DESIGN: "1 GiB and 100k
 * inodes by default, enforced by the kernel"):
 *   project quota  where the store's file system enforces one (ext4 with the
 *                  `project` feature mounted `prjquota`, XFS `pquota`): the
 *                  workspace directory gets project id = the sandbox's host
 *                  uid base (unique among live sandboxes, id range lock)
 *                  with FS_XFLAG_PROJINHERIT, and Q_SETQUOTA hard limits;
 *                  the project id can be changed from the init user
 *                  namespace only (fileattr_set_prepare), so not from inside;
 *   image          else: a sparse file <dir>/workspace.img (root 0600),
 *                  a copy of an empty ext4 image made once per (disk,
 *                  inodes) by mke2fs(8) with -N inodes, no journal, lazy
 *                  inode tables (<root>/workspace-templates/), attached to
 *                  a loop device with
 *                  LO_FLAGS_AUTOCLEAR (the device is freed with the last
 *                  reference: the mount) and mounted nosuid,nodev on
 *                  <dir>/workspace (noinit_itable: a sparse file reads as
 *                  zeros; discard: deleted data is given back to the host;
 *                  nobarrier: nothing is flushed for a file system that
 *                  dies with its sandbox).
 * A quota that neither can enforce refuses the sandbox (fail closed).  The
 * removal (umount, image, quota limits) is idempotent, for teardown and
 * prune.  What does NOT live here: copying files in and out (files.c,
 * workspace_ops.c), the rest of create and teardown. */
#include <errno.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/safe_path.h"

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

#define WS_NAME "workspace"
#define WS_IMAGE "workspace.img"
#define WS_TEMPLATES "workspace-templates"
/* ext4 needs room for its inode tables: at most one inode per 2 KiB asked
 * (256-byte inodes then take an eighth of the image). */
#define WS_BYTES_PER_INODE_MIN 2048

static const char *const mke2fs_paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs", NULL};

static long quotactl_fd(int fd, unsigned cmd, int id, void *addr) {
  return syscall(SYS_quotactl_fd, fd, cmd, id, addr);
}

/* Whether the file system of fd enforces project quotas. */
static bool project_quota_enforced(int fd) {
  struct fs_quota_statv st = {.qs_version = FS_QSTATV_VERSION1};
  if (quotactl_fd(fd, QCMD(Q_XGETQSTATV, PRJQUOTA), 0, &st) < 0) return false;
  return (st.qs_flags & FS_QUOTA_PDQ_ENFD) && (st.qs_flags & FS_QUOTA_PDQ_ACCT);
}

static const char *find_mke2fs(void) {
  for (size_t i = 0; mke2fs_paths[i]; i++)
    if (access(mke2fs_paths[i], X_OK) == 0) return mke2fs_paths[i];
  return NULL;
}

/* ext4 registered, or a module the mount will load (request_module). */
static bool kernel_has_ext4(void) {
  cleanup_fclose FILE *f = fopen("/proc/filesystems", "re");
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "\text4\n")) return true;
  struct utsname u;
  char dir[sizeof u.release + 64];
  if (uname(&u) < 0) return false;
  snprintf(dir, sizeof dir, "/lib/modules/%s/kernel/fs/ext4", u.release);
  return access(dir, F_OK) == 0;
}

enum an_sb_ws_kind an_sb_ws_mechanism(const char *dir, char *why, size_t len) {
  cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0 && project_quota_enforced(fd)) {
    snprintf(why, len, "project quota on the store's file system");
    return AN_SB_WS_PROJECT_QUOTA;
  }
  const char *missing = NULL;
  if (access("/dev/loop-control", R_OK | W_OK) < 0) missing = "/dev/loop-control (loop devices)";
  else if (!find_mke2fs()) missing = "mke2fs (e2fsprogs) in /usr/sbin or /sbin";
  else if (!kernel_has_ext4()) missing = "ext4 in /proc/filesystems";
  if (missing) {
    snprintf(why, len, "no project quota on the store's file system and no %s for an image", missing);
    return AN_SB_WS_NONE;
  }
  snprintf(why, len, "an ext4 image per sandbox on a loop device (no project quota on the store's file system)");
  return AN_SB_WS_IMAGE;
}

/* ---- project quota ------------------------------------------------------------------------ */

static int set_project_limits(int fsfd, uint32_t projid, uint64_t disk, uint64_t inodes, an_error_t *err) {
  struct if_dqblk q = {
    .dqb_bhardlimit = disk / QIF_DQBLKSIZE, .dqb_bsoftlimit = disk / QIF_DQBLKSIZE,
    .dqb_ihardlimit = inodes, .dqb_isoftlimit = inodes, .dqb_valid = QIF_LIMITS,
  };
  if (quotactl_fd(fsfd, QCMD(Q_SETQUOTA, PRJQUOTA), (int) projid, &q) < 0)
    return an_error_set(err, errno, "project quota %u: Q_SETQUOTA", projid);
  return 0;
}

static int make_project_quota(int dfd, int wsfd, uint32_t projid, uint64_t disk, uint64_t inodes,
                              an_error_t *err) {
  /* an id in use elsewhere (files left with it, another tool's project)
   * would share the budget: refuse */
  struct if_dqblk cur = {0};
  if (quotactl_fd(dfd, QCMD(Q_GETQUOTA, PRJQUOTA), (int) projid, &cur) == 0 &&
      (cur.dqb_curspace || cur.dqb_curinodes))
    return an_error_set(err, EBUSY, "project id %u already holds %llu bytes and %llu inodes", projid,
                        (unsigned long long) cur.dqb_curspace, (unsigned long long) cur.dqb_curinodes);
  struct fsxattr fa;
  if (ioctl(wsfd, FS_IOC_FSGETXATTR, &fa) < 0) return an_error_set(err, errno, "FS_IOC_FSGETXATTR");
  fa.fsx_projid = projid;
  fa.fsx_xflags |= FS_XFLAG_PROJINHERIT;
  if (ioctl(wsfd, FS_IOC_FSSETXATTR, &fa) < 0)
    return an_error_set(err, errno, "set project id %u (FS_IOC_FSSETXATTR)", projid);
  return set_project_limits(dfd, projid, disk, inodes, err);
}

/* ---- file system image --------------------------------------------------------------------- */

/* mke2fs(8) on the image; its stderr becomes the error message. */
static int run_mke2fs(const char *image, uint64_t disk, uint64_t inodes, an_error_t *err) {
  const char *prog = find_mke2fs();
  if (!prog) return an_error_set(err, ENOENT, "mke2fs (e2fsprogs) not found in /usr/sbin or /sbin");
  char n[32], kib[32];
  /* ext4 keeps its first 11 inodes (EXT4_GOOD_OLD_FIRST_INO) and the root
   * takes one: add them, so that about `inodes` files fit (mke2fs rounds
   * to whole inode table blocks) */
  snprintf(n, sizeof n, "%llu", (unsigned long long) inodes + 12);
  snprintf(kib, sizeof kib, "%lluk", (unsigned long long) (disk >> 10));
  /* no journal (the workspace dies with the sandbox; a snapshot is the
   * durable copy), no reserved blocks, no resize inode, 256-byte inodes
   * (project ids and nanosecond times) */
  char *argv[] = {(char *) prog, "-q", "-F", "-t", "ext4", "-O", "^has_journal,^resize_inode",
                  "-m", "0", "-I", "256", "-N", n,
                  "-E", "lazy_itable_init=1,nodiscard", (char *) image, kib, NULL};
  char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) < 0) return an_error_set(err, errno, "mke2fs: pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int r = posix_spawn(&pid, prog, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(ep[1]);
  if (r != 0) {
    close(ep[0]);
    return an_error_set(err, r, "run %s", prog);
  }
  char msg[512];
  size_t len = 0;
  ssize_t k;
  while ((k = read(ep[0], msg + len, sizeof msg - 1 - len)) != 0) {
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) break;
    len += (size_t) k;
    if (len == sizeof msg - 1) {   /* drain the rest */
      char sink[256];
      while (read(ep[0], sink, sizeof sink) > 0) {}
      break;
    }
  }
  close(ep[0]);
  msg[len] = '\0';
  while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) msg[--len] = '\0';
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return an_error_set(err, EIO, "%s %s: exit status %d%s%s", prog, image,
                        WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), len ? ": " : "", msg);
  return 0;
}

/* A free loop device bound to img_fd with autoclear; returns its fd. */
static int attach_loop(int img_fd, const char *image, char dev[32], an_error_t *err) {
  cleanup_close int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) return an_error_set(err, errno, "open /dev/loop-control");
  for (int tries = 0; tries < 32; tries++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    if (n < 0) return an_error_set(err, errno, "LOOP_CTL_GET_FREE");
    snprintf(dev, 32, "/dev/loop%d", n);
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ENXIO) continue;   /* raced with a removal */
      return an_error_set(err, errno, "open %s", dev);
    }
    struct loop_config lc = {.fd = (unsigned) img_fd};
    lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    size_t nl = strlen(image);   /* informational (losetup -a); cut to its 63 bytes */
    if (nl >= sizeof lc.info.lo_file_name) nl = sizeof lc.info.lo_file_name - 1;
    memcpy(lc.info.lo_file_name, image, nl);
    if (ioctl(fd, LOOP_CONFIGURE, &lc) == 0) return fd;
    int e = errno;
    close(fd);
    if (e != EBUSY) return an_error_set(err, e, "%s: LOOP_CONFIGURE with %s", dev, image);
    /* another process took it between GET_FREE and CONFIGURE */
  }
  return an_error_set(err, EBUSY, "no free loop device after 32 tries");
}

/* Copy the allocated extents of `from` into `to` (both size `len`): an
 * empty ext4 image is ~1 MB of metadata in a sparse file. */
static int copy_sparse(int from, int to, uint64_t len, an_error_t *err) {
  if (ftruncate(to, (off_t) len) < 0) return an_error_set(err, errno, "size the workspace image");
  off_t pos = 0;
  while ((uint64_t) pos < len) {
    off_t data = lseek(from, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;   /* only a hole is left */
      return an_error_set(err, errno, "workspace template: SEEK_DATA");
    }
    off_t hole = lseek(from, data, SEEK_HOLE);
    if (hole < 0) return an_error_set(err, errno, "workspace template: SEEK_HOLE");
    for (off_t in = data, out = data; in < hole;) {
      ssize_t n = copy_file_range(from, &in, to, &out, (size_t) (hole - in), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return an_error_set(err, n < 0 ? errno : EIO, "copy the workspace template");
    }
    pos = hole;
  }
  return 0;
}

/* The empty image for (disk, inodes), made once per store with mke2fs and
 * kept in <root>/workspace-templates/ (root, 0700), so that a create copies
 * ~1 MB of page cache instead of running mke2fs (and its fsync).  A
 * template that is not a root-owned 0600 regular file of the right size is
 * made again.  Returns an O_RDONLY fd. */
static int open_template(const char *root, uint64_t disk, uint64_t inodes, an_error_t *err) {
  char dir[PATH_MAX], path[PATH_MAX + 96], tmp[PATH_MAX + 128];
  snprintf(dir, sizeof dir, "%s/" WS_TEMPLATES, root);
  snprintf(path, sizeof path, "%s/ext4-%llu-%llu.img", dir, (unsigned long long) disk,
           (unsigned long long) inodes);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd >= 0) {
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0600 &&
        (uint64_t) st.st_size == disk)
      return fd;
    close(fd);
  }
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", dir);
  if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
    return an_error_set(err, EPERM, "%s: not a root-owned directory", dir);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int) getpid());
  unlink(tmp);
  cleanup_close int tfd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (tfd < 0) return an_error_set(err, errno, "create %s", tmp);
  int r = 0;
  if (ftruncate(tfd, (off_t) disk) < 0) r = an_error_set(err, errno, "size %s", tmp);
  if (r == 0) r = run_mke2fs(tmp, disk, inodes, err);
  /* concurrent creates race harmlessly: each rename puts an equal file */
  if (r == 0 && rename(tmp, path) < 0) r = an_error_set(err, errno, "rename %s", tmp);
  if (r < 0) {
    unlink(tmp);
    return r;
  }
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  return fd >= 0 ? fd : an_error_set(err, errno, "open %s", path);
}

static int make_image(const char *root, int dfd, const char *dir, const char *ws, uint64_t disk,
                      uint64_t inodes, an_error_t *err) {
  char image[PATH_MAX + 32];
  snprintf(image, sizeof image, "%s/%s", dir, WS_IMAGE);
  cleanup_close int tfd = open_template(root, disk, inodes, err);
  if (tfd < 0) return tfd;
  cleanup_close int ifd = openat(dfd, WS_IMAGE, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (ifd < 0) return an_error_set(err, errno, "create %s", image);
  int r = copy_sparse(tfd, ifd, disk, err);
  if (r < 0) return an_error_prefix(err, "%s", image);
  char dev[32];
  cleanup_close int lfd = attach_loop(ifd, image, dev, err);
  if (lfd < 0) return lfd;
  /* nobarrier: the file system dies with the sandbox, so its unmount need
   * not flush the image to the host's disk */
  if (mount(dev, ws, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME,
            "noinit_itable,discard,nobarrier,errors=remount-ro") < 0)
    return an_error_set(err, errno, "mount %s (%s) on %s", dev, image, ws);
  return 0;
}

/* ---- create and remove ----------------------------------------------------------------------- */

int an_sb_ws_make(const char *root, const char *dir, const char *ws, uint32_t projid, uint64_t disk,
                  uint64_t inodes, uid_t uid, gid_t gid, an_error_t *err) {
  char why[160];
  /* a small disk lowers the inode quota (never raises it) */
  if (inodes > disk / WS_BYTES_PER_INODE_MIN) inodes = disk / WS_BYTES_PER_INODE_MIN;
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) return an_error_set(err, errno, "open %s", dir);
  enum an_sb_ws_kind kind = an_sb_ws_mechanism(dir, why, sizeof why);
  if (kind == AN_SB_WS_NONE)
    return an_error_set(err, EOPNOTSUPP, "workspace quota (disk, inodes) cannot be enforced on this host: %s", why);
  if (kind == AN_SB_WS_IMAGE) {
    /* a sparse image can promise more than the disk has: refuse a quota
     * larger than the space free now (sandboxes together can still
     * overcommit; agentnest(1) SECURITY) */
    struct statvfs vs;
    if (fstatvfs(dfd, &vs) == 0 && disk > (uint64_t) vs.f_bavail * vs.f_frsize)
      return an_error_set(err, ENOSPC, "workspace quota of %llu bytes: more than the %llu bytes free in %s",
                          (unsigned long long) disk, (unsigned long long) vs.f_bavail * vs.f_frsize, dir);
  }
  if (mkdirat(dfd, WS_NAME, 0700) < 0) return an_error_set(err, errno, "workspace %s", ws);
  int r = 0;
  if (kind == AN_SB_WS_IMAGE) r = make_image(root, dfd, dir, ws, disk, inodes, err);
  if (r == 0) {
    /* the mounted root (image) or the directory itself (project quota) */
    cleanup_close int wfd = openat(dfd, WS_NAME, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (wfd < 0) r = an_error_set(err, errno, "open %s", ws);
    else if (kind == AN_SB_WS_IMAGE && unlinkat(wfd, "lost+found", AT_REMOVEDIR) < 0 && errno != ENOENT)
      r = an_error_set(err, errno, "remove %s/lost+found", ws);
    else if (fchown(wfd, uid, gid) < 0 || fchmod(wfd, 0700) < 0)
      r = an_error_set(err, errno, "workspace %s: owner and mode", ws);
    else if (kind == AN_SB_WS_PROJECT_QUOTA)
      r = make_project_quota(dfd, wfd, projid, disk, inodes, err);
  }
  if (r < 0) {
    an_error_t e = NULL;
    an_sb_ws_remove(dfd, &e);
    an_error_free(&e);
    return an_error_prefix(err, "workspace quota (%s)", why);
  }
  return 0;
}

int an_sb_ws_remove(int dfd, an_error_t *err) {
  int first = 0;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d/" WS_NAME, dfd);
  /* 1. the image's mount (lazily: an fd a CLI still holds keeps the file
   *    system until it closes; the loop device goes with it, autoclear) */
  for (int i = 0; i < 8; i++) {
    struct statx sx;
    if (statx(dfd, WS_NAME, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0 ||
        !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
      break;
    if (umount2(proc, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
      first = an_error_set(err, errno, "umount workspace");
      break;
    }
  }
  /* 2. a project quota's limits, read from the directory before it goes */
  uint32_t projid = 0;
  {
    cleanup_close int wfd = openat(dfd, WS_NAME, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    struct fsxattr fa;
    if (wfd >= 0 && ioctl(wfd, FS_IOC_FSGETXATTR, &fa) == 0 && (fa.fsx_xflags & FS_XFLAG_PROJINHERIT))
      projid = fa.fsx_projid;
  }
  an_error_t e = NULL;
  if (!first && an_remove_tree_beneath(dfd, WS_NAME, &e) < 0) first = an_error_set(err, e->errnum, "%s", e->msg);
  an_error_free(&e);
  if (projid && !first && set_project_limits(dfd, projid, 0, 0, &e) < 0)
    first = an_error_set(err, e->errnum, "%s", e->msg);
  an_error_free(&e);
  if (unlinkat(dfd, WS_IMAGE, 0) < 0 && errno != ENOENT && !first)
    first = an_error_set(err, errno, "remove " WS_IMAGE);
  return first;
}
